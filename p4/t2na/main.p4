/* Symphony on Tofino2 (T2NA): parsers, deparsers and the Pipeline/Switch
 * package around the shared parser and controls.  Ingress results cross the
 * traffic manager in the bridged header hdr.bridge. */
#ifndef _SYM_T2NA_MAIN_P4_
#define _SYM_T2NA_MAIN_P4_

parser SymT2IngressParser(packet_in pkt, out headers_t hdr, out sym_meta_t meta,
                          out ingress_intrinsic_metadata_t ig_intr_md) {
    SymPacketParser() packet_parser;
    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        packet_parser.apply(pkt, hdr.ethernet, hdr.ipv4, hdr.udp, hdr.tcp, meta);
        transition accept;
    }
}

control SymT2Ingress(inout headers_t hdr, inout sym_meta_t meta,
                     in ingress_intrinsic_metadata_t ig_intr_md,
                     in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                     inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                     inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    SymphonyIngress() symphony;
    apply {
        if (ig_prsr_md.parser_err != 0) {
            ig_dprsr_md.drop_ctl = 1;
        } else {
            symphony.apply(hdr, meta);
            if (meta.drop == 1) {
                ig_dprsr_md.drop_ctl = 1;
            } else {
                ig_tm_md.ucast_egress_port = meta.egress_port;
                hdr.bridge.setValid();
                hdr.bridge.flow_id = meta.flow_id;
                hdr.bridge.tracked = meta.tracked;
                hdr.bridge.enabled = meta.enabled;
                hdr.bridge.outpacing = meta.outpacing;
                hdr.bridge._pad = 0;
            }
        }
    }
}

control SymT2IngressDeparser(packet_out pkt, inout headers_t hdr, in sym_meta_t meta,
                             in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    apply {
        pkt.emit(hdr);          /* bridge first, then the packet's headers */
    }
}

parser SymT2EgressParser(packet_in pkt, out headers_t hdr, out sym_meta_t meta,
                         out egress_intrinsic_metadata_t eg_intr_md) {
    SymPacketParser() packet_parser;
    state start {
        pkt.extract(eg_intr_md);
        pkt.extract(hdr.bridge);
        packet_parser.apply(pkt, hdr.ethernet, hdr.ipv4, hdr.udp, hdr.tcp, meta);
        transition accept;
    }
}

control SymT2Egress(inout headers_t hdr, inout sym_meta_t meta,
                    in egress_intrinsic_metadata_t eg_intr_md,
                    in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                    inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                    inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    SymphonyEgress() symphony;
    apply {
        meta.flow_id = hdr.bridge.flow_id;
        meta.tracked = hdr.bridge.tracked;
        meta.enabled = hdr.bridge.enabled;
        meta.outpacing = hdr.bridge.outpacing;
        meta.qdepth = eg_intr_md.enq_qdepth;        /* 176-byte cells on Tofino2 */
        meta.egress_port = eg_intr_md.egress_port;
        hdr.bridge.setInvalid();
        symphony.apply(hdr, meta);
    }
}

control SymT2EgressDeparser(packet_out pkt, inout headers_t hdr, in sym_meta_t meta,
                            in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Checksum() ipv4_checksum;
    apply {
        if (hdr.ipv4.isValid()) {
            hdr.ipv4.hdr_checksum = ipv4_checksum.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
                hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
                hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
                hdr.ipv4.src_addr, hdr.ipv4.dst_addr });
        }
        pkt.emit(hdr);
    }
}

Pipeline(SymT2IngressParser(), SymT2Ingress(), SymT2IngressDeparser(),
         SymT2EgressParser(), SymT2Egress(), SymT2EgressDeparser()) pipe;

Switch(pipe) main;

#endif
