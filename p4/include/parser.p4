/* Symphony: the packet parser shared by every target, called as a sub-parser
 * after the target's own intrinsic metadata (and, on T2NA's egress, the
 * bridged header).  A truncated header is a parser error (PacketTooShort);
 * each target drops such packets in ingress.
 *
 * Its outputs are `out`, so every target's parser hands the program fully
 * initialised headers and metadata (p4c checks this):
 * - the packet's headers, one parameter each: a header not extracted stays
 *   invalid, and the target's own headers (hdr.bridge) are left alone;
 * - the whole metadata, started at zero here (BMv2 zeroes user metadata,
 *   Tofino's parser does not), with meta.l4_dport set to the UDP or TCP
 *   destination port. */
#ifndef _SYM_PARSER_P4_
#define _SYM_PARSER_P4_

parser SymPacketParser(packet_in pkt, out ethernet_t ethernet, out ipv4_t ipv4, out udp_t udp, out tcp_t tcp,
                       out sym_meta_t meta) {
    state start {
        meta.l4_dport = 0;
        meta.l4_proto = 0;
        meta.l4_sport = 0;
        meta.ecmp = 0;
        meta.ecmp_group = 0;
        meta.ecmp_sport = 0;
        meta.ecmp_bucket = 0;
        meta.drop = 0;
        meta.egress_port = 0;
        meta.tracked = 0;
        meta.flow_id = 0;
        meta.job_slot = 0;
        meta.n_local_m1 = 0;
        meta.threshold = 0;
        meta.enabled = 0;
        meta.tcp = 0;
        meta.step = 0;
        meta.is_new = 0;
        meta.jump = 0;
        meta.complete = 0;
        meta.ahead = 0;
        meta.outpacing = 0;
        meta.qdepth = 0;
        pkt.extract(ethernet);
        transition select(ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    /* L4 only for plain IPv4 (no options) and the first fragment; anything
     * else is left to ingress, which drops version != 4 and ihl != 5. */
    state parse_ipv4 {
        pkt.extract(ipv4);
        transition select(ipv4.version, ipv4.ihl, ipv4.frag_offset, ipv4.protocol) {
            (4w4, 4w5, 13w0, IP_PROTO_UDP): parse_udp;
            (4w4, 4w5, 13w0, IP_PROTO_TCP): parse_tcp;
            default: accept;
        }
    }

    /* l4_dport: the symphony_flows key takes the destination port from
     * whichever L4 header is valid, so UDP and TCP ring flows share it */
    state parse_udp {
        pkt.extract(udp);
        meta.l4_dport = udp.dst_port;
        meta.l4_proto = IP_PROTO_UDP;
        meta.l4_sport = udp.src_port;
        transition accept;
    }

    state parse_tcp {
        pkt.extract(tcp);
        meta.l4_dport = tcp.dst_port;
        meta.l4_proto = IP_PROTO_TCP;
        meta.l4_sport = tcp.src_port;
        transition accept;
    }
}

#endif
