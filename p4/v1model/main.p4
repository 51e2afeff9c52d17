/* Symphony on v1model (BMv2 simple_switch): the V1Switch package around the
 * shared parser and controls. */
#ifndef _SYM_V1MODEL_MAIN_P4_
#define _SYM_V1MODEL_MAIN_P4_

/* BMv2 paces an egress queue in packets per second (set_queue_rate), whatever
 * a packet's size, so a 70-byte ACK or CNP would take a 1500-byte data
 * packet's departure slot.  Frames of at most SYM_V1_CTRL_FRAME_BYTES that are
 * not ECN-capable (the transports' ACKs and CNPs, TCP's pure ACKs) wait in
 * priority queue SYM_V1_CTRL_PRIORITY of their port instead, with a rate of
 * their own; every ECN-capable packet stays in queue 0, whose depth is the
 * enq_qdepth its marking reads.  simple_switch must run with
 * `-- --priority-queues 2` (it drops a packet whose priority has no queue);
 * the control plane sets both queues (topologies/switch/bmv2.py, p4/README.md). */
#define SYM_V1_CTRL_FRAME_BYTES 128
#define SYM_V1_CTRL_PRIORITY    1

parser SymV1Parser(packet_in pkt, out headers_t hdr, inout sym_meta_t meta,
                   inout standard_metadata_t std_meta) {
    SymPacketParser() packet_parser;
    state start {
        packet_parser.apply(pkt, hdr.ethernet, hdr.ipv4, hdr.udp, hdr.tcp, meta);
        transition accept;
    }
}

control SymV1VerifyChecksum(inout headers_t hdr, inout sym_meta_t meta) {
    apply { }
}

control SymV1Ingress(inout headers_t hdr, inout sym_meta_t meta,
                     inout standard_metadata_t std_meta) {
    SymphonyIngress() symphony;
    apply {
        /* BMv2 hands packets with a parser error (e.g. PacketTooShort) to
         * ingress with the headers before the error valid: drop them here. */
        if (std_meta.parser_error != error.NoError) {
            mark_to_drop(std_meta);
        } else {
            symphony.apply(hdr, meta);
            if (meta.drop == 1) {
                mark_to_drop(std_meta);
            } else {
                std_meta.egress_spec = meta.egress_port;
                if (std_meta.packet_length <= SYM_V1_CTRL_FRAME_BYTES && hdr.ipv4.ecn == 2w0) {
                    std_meta.priority = SYM_V1_CTRL_PRIORITY;
                }
            }
        }
    }
}

control SymV1Egress(inout headers_t hdr, inout sym_meta_t meta,
                    inout standard_metadata_t std_meta) {
    SymphonyEgress() symphony;
    apply {
        meta.qdepth = std_meta.enq_qdepth;          /* packets */
        meta.egress_port = std_meta.egress_port;
        symphony.apply(hdr, meta);
    }
}

control SymV1ComputeChecksum(inout headers_t hdr, inout sym_meta_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control SymV1Deparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.tcp);
    }
}

V1Switch(SymV1Parser(), SymV1VerifyChecksum(), SymV1Ingress(), SymV1Egress(),
         SymV1ComputeChecksum(), SymV1Deparser()) main;

#endif
