/* Symphony: headers and metadata shared by every target. */
#ifndef _SYM_HEADERS_P4_
#define _SYM_HEADERS_P4_

typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;
typedef bit<9>  sym_port_t;     /* egress port, 9 bits on v1model and Tofino2 */
typedef bit<16> sym_tag_t;      /* a step tag (14 bits UDP, 6 bits TCP) held in 16 bits */
typedef bit<19> sym_qdepth_t;   /* enq_qdepth: packets on v1model, 176-byte cells on Tofino2 */
typedef bit<17> sym_prob_t;     /* probability in units of 2^-16, SYM_PROB_ONE = always */
typedef bit<6>  sym_ecmp_bucket_t;   /* SYM_ECMP_BUCKET_BITS */

header ethernet_t {
    mac_addr_t dst_addr;
    mac_addr_t src_addr;
    bit<16>    ether_type;
}

/* The TOS byte split as in p4lang/tutorials' ecn exercise. */
header ipv4_t {
    bit<4>      version;
    bit<4>      ihl;
    bit<6>      dscp;
    bit<2>      ecn;
    bit<16>     total_len;
    bit<16>     identification;
    bit<3>      flags;
    bit<13>     frag_offset;
    bit<8>      ttl;
    bit<8>      protocol;
    bit<16>     hdr_checksum;
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

header udp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> len;
    bit<16> checksum;
}

/* Fixed part only: options stay in the payload, which the deparser copies. */
header tcp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<32> seq_no;
    bit<32> ack_no;
    bit<4>  data_offset;
    bit<4>  res;
    bit<8>  flags;
    bit<16> window;
    bit<16> checksum;
    bit<16> urgent_ptr;
}

/* What egress needs from ingress.  v1model keeps user metadata across the
 * traffic manager; Tofino does not, so the T2NA target carries these fields
 * in front of the packet (fabric-tna's "bridged metadata"). */
header sym_bridge_t {
    bit<16> flow_id;
    bit<1>  tracked;
    bit<1>  enabled;
    bit<1>  outpacing;
    bit<5>  _pad;
}

struct headers_t {
    sym_bridge_t bridge;
    ethernet_t   ethernet;
    ipv4_t       ipv4;
    udp_t        udp;
    tcp_t        tcp;
}

struct sym_meta_t {
    /* parser: L4 destination port of whichever of UDP/TCP is valid (the
     * symphony_flows key), 0 when neither is */
    bit<16>      l4_dport;
    /* ... and its protocol and source port, 0 when neither is: what the
     * ECMP hash reads of L4 (contract/ecmp.py) */
    bit<8>       l4_proto;
    bit<16>      l4_sport;
    /* forward's ecmp_forward: the group, the source port masked for the
     * hash, the bucket the hash picked */
    bit<1>       ecmp;
    bit<8>       ecmp_group;
    bit<16>      ecmp_sport;
    sym_ecmp_bucket_t ecmp_bucket;
    /* ingress results */
    bit<1>       drop;
    sym_port_t   egress_port;
    /* symphony_flows' track() parameters */
    bit<1>       tracked;
    bit<16>      flow_id;
    bit<8>       job_slot;
    bit<8>       n_local_m1;    /* n_local - 1: the arrival that completes a step */
    bit<16>      threshold;
    bit<1>       enabled;
    bit<1>       tcp;           /* the flow's mode: 1 = tag in the DSCP of TCP, 0 = in the UDP source port */
    /* Symphony state of this packet */
    sym_tag_t    step;
    bit<1>       is_new;
    bit<1>       jump;          /* more than the step window from the flow's newest step */
    bit<1>       complete;
    sym_tag_t    ahead;
    bit<1>       outpacing;
    /* egress: queue depth this packet saw at enqueue, in the target's unit */
    sym_qdepth_t qdepth;
}

#endif
