/* Symphony: forwarding, step tracking and ECN marking, shared by every target.
 *
 * Written against small per-target wrappers, one per register or counter
 * operation (v1model/wrappers.p4, t2na/wrappers.p4):
 *   FlowStepUpdate    flow_step[flow]: keep a new step (within the flow's step window),
 *                     tell whether it is new, and whether it is a jump (beyond the window)
 *   StepCountUpdate   step_count[job*W + step mod W]: count; the n_local-th resets and completes
 *   FrontierUpdate    frontier[job]: advance on completion; return how far the step is
 *                     ahead of it, (step - frontier) mod 2^w (a step behind: >= 2^(w-1))
 * The two serial comparisons take the flow's mode (tcp = 1: 6-bit DSCP tag,
 * 0: 14-bit UDP source-port tag); on T2NA each mode is its own RegisterAction.
 *   AheadRunUpdate    ahead_run[port]: ECT packets that Symphony would mark (tracked,
 *                     enabled, outpacing) in a row at the egress port; any other ECT
 *                     packet resets it.  Returns the count before this packet.
 *   PktsCount, StepJumpCount, SymMarkCount, FlowQueueMarkCount (per flow), QueueMarkCount,
 *                     VerdictMarkCount (per port)
 *   SymRandom         two 16-bit random numbers
 *   SymLess           a < b for two fields (Tofino's gateways compare a field with
 *                     constants only; T2NA computes b |-| a in a table's action)
 *   EcmpHash          the ECMP bucket: the low bits of the CRC-32 of (src, dst, L4
 *                     protocol, source port masked, destination port), contract/ecmp.py
 * Each register is touched once per packet.
 */
#ifndef _SYM_CONTROL_P4_
#define _SYM_CONTROL_P4_

control SymphonyIngress(inout headers_t hdr, inout sym_meta_t meta) {
    FlowStepUpdate()  flow_step_update;
    StepCountUpdate() step_count_update;
    FrontierUpdate()  frontier_update;
    PktsCount()       pkts_count;
    StepJumpCount()   step_jumps_count;
    SymLess()         over_threshold;
    EcmpHash()        ecmp_hash;

    action drop() {
        meta.drop = 1;
    }

    /* p4lang/tutorials' convention: the new source MAC is the destination MAC
     * the sender used (this switch's), the new destination the next hop's. */
    action ipv4_forward(mac_addr_t dst_mac, sym_port_t port) {
        meta.egress_port = port;
        hdr.ethernet.src_addr = hdr.ethernet.dst_addr;
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    /* A destination with several equal-cost next hops (routing ecmp*): the
     * MACs and TTL as ipv4_forward, the port left to ecmp_select.  The
     * source port is masked before the hash: 0xFFFF hashes the step tag too,
     * 0xC000 (ecmp-flow) leaves its bits out, so a ring flow keeps one path. */
    action ecmp_forward(mac_addr_t dst_mac, bit<8> group, bit<16> sport_mask) {
        meta.ecmp = 1;
        meta.ecmp_group = group;
        meta.ecmp_sport = meta.l4_sport & sport_mask;
        hdr.ethernet.src_addr = hdr.ethernet.dst_addr;
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    table forward {
        key = { hdr.ipv4.dst_addr: lpm; }
        actions = { ipv4_forward; ecmp_forward; drop; }
        default_action = drop();
        size = SYM_FORWARD_SIZE;
    }

    action ecmp_port(sym_port_t port) {
        meta.egress_port = port;
    }

    /* (group, bucket) -> port: bucket b of a group of n ports is port b mod n */
    table ecmp_select {
        key = {
            meta.ecmp_group:  exact;
            meta.ecmp_bucket: exact;
        }
        actions = { ecmp_port; drop; }
        default_action = drop();
        size = SYM_ECMP_SELECT_SIZE;
    }

    /* tcp: the job's transport, which says where the step tag is (1: the
     * DSCP of TCP segments, 6 bits; 0: the UDP source port, 14 bits) */
    action track(bit<16> flow_id, bit<8> job_slot, bit<8> n_local, bit<16> threshold, bit<1> enabled,
                 bit<1> tcp) {
        meta.tracked = 1;
        meta.flow_id = flow_id;
        meta.job_slot = job_slot;
        meta.n_local_m1 = n_local - 1;
        meta.threshold = threshold;
        meta.enabled = enabled;
        meta.tcp = tcp;
    }

    /* One entry per ring flow crossing this switch: (src, dst, data port);
     * the port is the UDP or TCP destination port (the parser's l4_dport). */
    table symphony_flows {
        key = {
            hdr.ipv4.src_addr: exact;
            hdr.ipv4.dst_addr: exact;
            meta.l4_dport:     exact;
        }
        actions = { track; NoAction; }
        default_action = NoAction();
        size = SYM_FLOWS_SIZE;
    }

    apply {
        meta.drop = 0;
        meta.tracked = 0;
        meta.is_new = 0;
        meta.jump = 0;
        meta.complete = 0;
        meta.outpacing = 0;
        meta.enabled = 0;
        meta.tcp = 0;
        if (!hdr.ipv4.isValid()) {
            drop();                                 /* the switch routes IPv4 only */
        } else if (hdr.ipv4.version != 4w4 || hdr.ipv4.ihl != 4w5 || hdr.ipv4.ttl <= 8w1) {
            drop();                                 /* malformed, options, or expired */
        } else if (forward.apply().hit) {
            /* Tofino: a table's hit must be an if by itself (a drop entry hits too) */
            if (meta.ecmp == 1) {
                ecmp_hash.apply(hdr.ipv4.src_addr, hdr.ipv4.dst_addr, meta.l4_proto, meta.ecmp_sport,
                                meta.l4_dport, meta.ecmp_bucket);
                ecmp_select.apply();
            }
            if (meta.drop == 0) {
                /* Candidates: tagged UDP (top two bits of the source port set,
                 * 0xC000 | tag) and TCP (tag in the DSCP).  The entry says the
                 * flow's mode; a packet of the other protocol is not tracked. */
                bit<1> pkt_tcp = 0;
                bool candidate = false;
                if (hdr.udp.isValid() && hdr.udp.src_port[15:14] == 2w3) {
                    candidate = true;
                    meta.step = hdr.udp.src_port & SYM_TAG_MASK;
                } else if (hdr.tcp.isValid()) {
                    candidate = true;
                    pkt_tcp = 1;
                    meta.step = (sym_tag_t)hdr.ipv4.dscp;
                }
                if (candidate) {
                    symphony_flows.apply();
                    if (meta.tcp != pkt_tcp) {
                        meta.tracked = 0;
                    }
                }
                if (meta.tracked == 1) {
                    pkts_count.apply(meta.flow_id);
                    flow_step_update.apply(meta.flow_id, meta.step, meta.tcp, meta.is_new, meta.jump);
                    if (meta.jump == 1) {
                        step_jumps_count.apply(meta.flow_id);   /* not the flow's: moves nothing */
                    }
                    if (meta.is_new == 1) {
                        step_count_update.apply(meta.job_slot, meta.step, meta.n_local_m1, meta.complete);
                    }
                    frontier_update.apply((bit<16>)meta.job_slot, meta.step, meta.tcp, meta.complete, meta.ahead);
                    /* outpacing: step - frontier > threshold in serial arithmetic
                     * on the mode's tag width (a packet behind the frontier has a
                     * "negative" distance, ahead >= half); a jump is never outpacing */
                    bit<1> over;
                    over_threshold.apply((bit<32>)meta.threshold, (bit<32>)meta.ahead, over);
                    if (meta.jump == 0 && over == 1) {            /* ahead > threshold */
                        if (meta.tcp == 1) {
                            if (meta.ahead < SYM_DSCP_TAG_HALF) {
                                meta.outpacing = 1;
                            }
                        } else if (meta.ahead < SYM_TAG_HALF) {
                            meta.outpacing = 1;
                        }
                    }
                }
            }
        }
    }
}

control SymphonyEgress(inout headers_t hdr, inout sym_meta_t meta) {
    SymRandom()          rng;
    SymMarkCount()       sym_marks_count;
    QueueMarkCount()     queue_marks_count;
    FlowQueueMarkCount() flow_queue_marks_count;
    SymLess()            queue_draw;
    SymLess()            sym_draw_less;
    SymLess()            below_k_sym;
    SymLess()            gate_open;
    AheadRunUpdate()     ahead_run_update;
    VerdictMarkCount()   verdict_marks_count;

    sym_prob_t   q_prob = 0;
    sym_qdepth_t k_sym = SYM_K_SYM_DEFAULT;
    sym_prob_t   p_sym = SYM_PROB_ONE;
    bit<16>      gate = SYM_GATE_DEFAULT;
    bit<1>       verdict_on = 0;

    /* Queue (DCQCN/RED-style) marking probability by queue depth.  The
     * control plane installs ranges: (Kmin, Kmax] with Pmax (q-Kmin)/(Kmax-Kmin)
     * and (Kmax, max] with SYM_PROB_ONE (topologies/symphony_state.py). */
    action queue_mark_prob(sym_prob_t prob) {
        q_prob = prob;
    }

    table queue_ecn {
        key = { meta.qdepth: range; }
        actions = { queue_mark_prob; NoAction; }
        default_action = NoAction();
        size = SYM_QUEUE_ECN_SIZE;
    }

    /* g: the gate, in packets (0: off).  A flow ahead is marked only while
     * fewer than g packets ahead have left the port since one that is not
     * (a flow of its job behind it, another job's, untracked traffic): where
     * only flows ahead share a queue, slowing them gives the bandwidth to
     * nobody (docs/design.md, "The gate"). */
    action set_sym_ecn(sym_qdepth_t k, sym_prob_t p, bit<16> g) {
        k_sym = k;
        p_sym = p;
        gate = g;
    }

    /* Keyless: the control plane sets K_sym, P_sym and the gate with table_set_default. */
    table sym_ecn {
        actions = { set_sym_ecn; }
        default_action = set_sym_ecn(SYM_K_SYM_DEFAULT, SYM_PROB_ONE, SYM_GATE_DEFAULT);
        size = SYM_SYM_ECN_SIZE;
    }

    /* The leaves' verdict (track "verdict", contract/tags.py VERDICT_FLAG):
     * on, a tracked flow's packet leaves saying in the reserved IPv4 flag
     * whether this switch would mark it, and a packet of a flow the switch
     * does not track is a candidate when it says so. */
    action set_verdict(bit<1> on) {
        verdict_on = on;
    }

    /* Keyless: the control plane turns it on with table_set_default. */
    table sym_verdict {
        actions = { set_verdict; }
        default_action = set_verdict(0);
        size = SYM_SYM_VERDICT_SIZE;
    }

    apply {
        /* ECN-capable packets only: ECT(1) or ECT(0); CE is already marked. */
        if (hdr.ipv4.isValid() && (hdr.ipv4.ecn == 2w1 || hdr.ipv4.ecn == 2w2)) {
            bit<16> r_queue;
            bit<16> r_sym;
            rng.apply(r_queue, r_sym);
            queue_ecn.apply();
            sym_ecn.apply();
            sym_verdict.apply();
            bit<1> queue_mark;          /* r_queue < q_prob */
            bit<1> sym_draw;            /* r_sym < p_sym */
            bit<1> below_k;             /* qdepth < K_sym */
            queue_draw.apply((bit<32>)r_queue, (bit<32>)q_prob, queue_mark);
            sym_draw_less.apply((bit<32>)r_sym, (bit<32>)p_sym, sym_draw);
            below_k_sym.apply((bit<32>)meta.qdepth, (bit<32>)k_sym, below_k);
            bit<1> candidate = 0;       /* a packet Symphony would mark */
            if (meta.tracked == 1 && meta.enabled == 1 && meta.outpacing == 1) {
                candidate = 1;
            }
            if (verdict_on == 1) {
                if (meta.tracked == 1) {
                    hdr.ipv4.flags[SYM_VERDICT_BIT:SYM_VERDICT_BIT] = candidate;   /* onward */
                } else if (hdr.ipv4.flags[SYM_VERDICT_BIT:SYM_VERDICT_BIT] == 1) {
                    candidate = 1;                      /* an earlier switch's verdict */
                }
            }
            bit<16> run;                /* packets ahead in a row before this one */
            ahead_run_update.apply(meta.egress_port, candidate, run);
            bit<1> open = 1;            /* gate 0: off, the queue alone decides */
            if (gate != 0) {
                gate_open.apply((bit<32>)run, (bit<32>)gate, open);
            }
            bit<1> sym_mark = 0;
            if (candidate == 1 && open == 1 && below_k == 0 && sym_draw == 1) {
                sym_mark = 1;
            }
            if (queue_mark == 1 || sym_mark == 1) {
                hdr.ipv4.ecn = 2w3;
            }
            if (queue_mark == 1) {
                queue_marks_count.apply(meta.egress_port);
                if (meta.tracked == 1) {
                    flow_queue_marks_count.apply(meta.flow_id);
                }
            }
            if (sym_mark == 1) {
                if (meta.tracked == 1) {
                    sym_marks_count.apply(meta.flow_id);
                } else {
                    verdict_marks_count.apply(meta.egress_port);
                }
            }
        }
    }
}

#endif
