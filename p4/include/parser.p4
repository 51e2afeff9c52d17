/* Symphony: the packet parser shared by every target, called as a sub-parser
 * after the target's own intrinsic metadata.  A truncated header is a parser
 * error (PacketTooShort); each target drops such packets in ingress.  It also
 * sets meta.l4_dport (the UDP or TCP destination port). */
#ifndef _SYM_PARSER_P4_
#define _SYM_PARSER_P4_

parser SymPacketParser(packet_in pkt, inout headers_t hdr, inout sym_meta_t meta) {
    state start {
        meta.l4_dport = 0;
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    /* L4 only for plain IPv4 (no options) and the first fragment; anything
     * else is left to ingress, which drops version != 4 and ihl != 5. */
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (4w4, 4w5, 13w0, IP_PROTO_UDP): parse_udp;
            (4w4, 4w5, 13w0, IP_PROTO_TCP): parse_tcp;
            default: accept;
        }
    }

    /* l4_dport: the symphony_flows key takes the destination port from
     * whichever L4 header is valid, so UDP and TCP ring flows share it */
    state parse_udp {
        pkt.extract(hdr.udp);
        meta.l4_dport = hdr.udp.dst_port;
        transition accept;
    }

    state parse_tcp {
        pkt.extract(hdr.tcp);
        meta.l4_dport = hdr.tcp.dst_port;
        transition accept;
    }
}

#endif
