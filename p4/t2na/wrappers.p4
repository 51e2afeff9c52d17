/* Symphony on Tofino2 (T2NA): one small control per register or counter
 * operation, with the signatures include/control.p4 expects.  Each register
 * has one RegisterAction per operation (and tag width) and is executed once per packet, so
 * every wrapper fits one stateful ALU. */
#ifndef _SYM_T2NA_WRAPPERS_P4_
#define _SYM_T2NA_WRAPPERS_P4_

/* Tags left-aligned in the 16-bit registers.  Tofino's stateful ALU takes a
 * condition of at most one sum or difference against a constant, so a
 * masked serial difference, ((a - b) & MASK) < N, does not fit.  Shifted
 * left by k = 16 - w bits (the UDP tag by 2, the DSCP tag by 10), a tag's
 * serial difference is the plain 16-bit difference, and "1 <= d <= N" on
 * the tag is two compares, a << k != b << k and (a << k) - (b << k) <= N << k
 * (two of the ALU's condition units).  The registers
 * hold the tags shifted (what a Tofino vector adapter shifts back); every
 * output is shifted back here, so include/control.p4 sees the tags as on
 * BMv2. */
#define SYM_T2_SHIFT      (16 - SYM_TAG_BITS)
#define SYM_T2_SHIFT_DSCP (16 - SYM_DSCP_TAG_BITS)
/* every bound, shifted, must stay a 16-bit value for the compares to hold */
#if (SYM_STEP_WINDOW << SYM_T2_SHIFT) >= 0x10000 || (SYM_DSCP_STEP_WINDOW << SYM_T2_SHIFT_DSCP) >= 0x10000
#error "a step window shifted left by 16 - w bits leaves the 16-bit register"
#endif
/* a tag left-aligned: wiring (a concatenation), no ALU operation */
#define SYM_T2_UDP(step)  ((step)[SYM_TAG_BITS - 1:0] ++ (bit<SYM_T2_SHIFT>)0)
#define SYM_T2_DSCP(step) ((step)[SYM_DSCP_TAG_BITS - 1:0] ++ (bit<SYM_T2_SHIFT_DSCP>)0)
/* d >= 1 is a != b (tags left-aligned differ by a multiple of 2^k): a
 * register's actions share four constant slots */
#define SYM_T2_WITHIN(a, b, N, K) ((a) != (b) && (a) - (b) <= ((bit<16>)(N) << (K)))

/* flow_step: each tag width has its own RegisterAction, and one of them runs
 * per packet.  With d the step's distance from the tag held (constants.p4),
 * it keeps a new step (SYM_NEW, 1 <= d <= window) and returns the flags
 * (bit 0 new, bit 1 jump: window < d < 2^w - window): a gateway compares a
 * field with constants only, and d has more bits than it can range-compare,
 * so the ALU's condition units decide. */
#define SYM_T2_STEP(step_al, value, rv, WIN, BITS)                                        \
    rv = 0;                                                                               \
    if (SYM_T2_WITHIN(step_al, value, WIN, 16 - (BITS))) {                               \
        value = step_al;                                                                  \
        rv = 1;                                                                           \
    } else if ((step_al) - (value) > ((bit<16>)(WIN) << (16 - (BITS)))                   \
               && (step_al) - (value) < ((bit<16>)((1 << (BITS)) - (WIN)) << (16 - (BITS)))) { \
        rv = 2;                                                                           \
    }
control FlowStepUpdate(in bit<16> flow_id, in sym_tag_t step, in bit<1> tcp, out bit<1> is_new,
                       out bit<1> jump) {
    Register<bit<16>, bit<16>>(SYM_MAX_FLOWS, 0) flow_step;
    RegisterAction<bit<16>, bit<16>, bit<2>>(flow_step) keep_newer_udp = {
        void apply(inout bit<16> value, out bit<2> rv) {
            SYM_T2_STEP(SYM_T2_UDP(step), value, rv, SYM_STEP_WINDOW, SYM_TAG_BITS)
        }
    };
    RegisterAction<bit<16>, bit<16>, bit<2>>(flow_step) keep_newer_tcp = {
        void apply(inout bit<16> value, out bit<2> rv) {
            SYM_T2_STEP(SYM_T2_DSCP(step), value, rv, SYM_DSCP_STEP_WINDOW, SYM_DSCP_TAG_BITS)
        }
    };
    apply {
        bit<2> flags;
        if (tcp == 1) {
            flags = keep_newer_tcp.execute(flow_id);
        } else {
            flags = keep_newer_udp.execute(flow_id);
        }
        is_new = flags[0:0];
        jump = flags[1:1];
    }
}

control StepCountUpdate(in bit<8> job_slot, in sym_tag_t step, in bit<8> n_local_m1, out bit<1> complete) {
    Register<bit<16>, bit<16>>(SYM_STEP_SLOTS, 0) step_count;
    /* the n_local-th arrival resets the slot and reports the step complete */
    RegisterAction<bit<16>, bit<16>, bit<1>>(step_count) count_arrival = {
        void apply(inout bit<16> value, out bit<1> rv) {
            if (value >= (bit<16>)n_local_m1) {
                value = 0;
                rv = 1;
            } else {
                value = value + 1;
                rv = 0;
            }
        }
    };
    /* SYM_SLOT as wiring: the job's slot above the step's low W_BITS bits,
     * through an identity hash (Tofino indexes a register with a field or a
     * hash, and computing the slot would take an action of its own) */
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) slot_index;
    apply { complete = count_arrival.execute(slot_index.get({job_slot, step[SYM_W_BITS - 1:0]})); }
}

/* frontier: SYM_AFTER on the tag is 1 <= d <= HALF - 1.  Each action
 * returns the step's distance from the frontier after the update,
 * left-aligned: (step << k) - (frontier << k) is (step - frontier) mod 2^w,
 * shifted. */
control SymT2Frontier(in bit<16> job, in sym_tag_t step, in bit<1> tcp, in bit<1> complete,
                      out bit<16> ahead_al) {
    Register<bit<16>, bit<16>>(SYM_MAX_JOBS, 0) frontier;
    RegisterAction<bit<16>, bit<16>, bit<16>>(frontier) advance_udp = {
        void apply(inout bit<16> current, out bit<16> rv) {
            if (SYM_T2_WITHIN(SYM_T2_UDP(step), current, SYM_TAG_HALF - 1, SYM_T2_SHIFT)) {
                current = SYM_T2_UDP(step);
            }
            rv = SYM_T2_UDP(step) - current;
        }
    };
    RegisterAction<bit<16>, bit<16>, bit<16>>(frontier) advance_tcp = {
        void apply(inout bit<16> current, out bit<16> rv) {
            if (SYM_T2_WITHIN(SYM_T2_DSCP(step), current, SYM_DSCP_TAG_HALF - 1, SYM_T2_SHIFT_DSCP)) {
                current = SYM_T2_DSCP(step);
            }
            rv = SYM_T2_DSCP(step) - current;
        }
    };
    RegisterAction<bit<16>, bit<16>, bit<16>>(frontier) read_udp = {
        void apply(inout bit<16> current, out bit<16> rv) {
            rv = SYM_T2_UDP(step) - current;
        }
    };
    RegisterAction<bit<16>, bit<16>, bit<16>>(frontier) read_tcp = {
        void apply(inout bit<16> current, out bit<16> rv) {
            rv = SYM_T2_DSCP(step) - current;
        }
    };
    apply {
        if (complete == 1 && tcp == 1) {
            ahead_al = advance_tcp.execute(job);
        } else if (complete == 1) {
            ahead_al = advance_udp.execute(job);
        } else if (tcp == 1) {
            ahead_al = read_tcp.execute(job);
        } else {
            ahead_al = read_udp.execute(job);
        }
    }
}

control FrontierUpdate(in bit<16> job, in sym_tag_t step, in bit<1> tcp, in bit<1> complete,
                       out sym_tag_t ahead) {
    SymT2Frontier() frontier;
    apply {
        bit<16> ahead_al;
        frontier.apply(job, step, tcp, complete, ahead_al);
        if (tcp == 1) {
            ahead = ahead_al >> SYM_T2_SHIFT_DSCP;
        } else {
            ahead = ahead_al >> SYM_T2_SHIFT;
        }
    }
}

control PktsCount(in bit<16> flow_id) {
    Counter<bit<32>, bit<16>>(SYM_MAX_FLOWS, CounterType_t.PACKETS_AND_BYTES) pkts;
    apply { pkts.count(flow_id); }
}

control StepJumpCount(in bit<16> flow_id) {
    Counter<bit<32>, bit<16>>(SYM_MAX_FLOWS, CounterType_t.PACKETS_AND_BYTES) step_jumps;
    apply { step_jumps.count(flow_id); }
}

control SymMarkCount(in bit<16> flow_id) {
    Counter<bit<32>, bit<16>>(SYM_MAX_FLOWS, CounterType_t.PACKETS_AND_BYTES) sym_marks;
    apply { sym_marks.count(flow_id); }
}

control FlowQueueMarkCount(in bit<16> flow_id) {
    Counter<bit<32>, bit<16>>(SYM_MAX_FLOWS, CounterType_t.PACKETS_AND_BYTES) flow_queue_marks;
    apply { flow_queue_marks.count(flow_id); }
}

control QueueMarkCount(in sym_port_t port) {
    Counter<bit<32>, sym_port_t>(SYM_NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) queue_marks;
    apply { queue_marks.count(port); }
}

control VerdictMarkCount(in sym_port_t port) {
    Counter<bit<32>, sym_port_t>(SYM_NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) verdict_marks;
    apply { verdict_marks.count(port); }
}

/* ahead: the packet is one Symphony would mark; run: the count before it.
 * Two RegisterActions, one executed per packet. */
control AheadRunUpdate(in sym_port_t port, in bit<1> ahead, out bit<16> run) {
    Register<bit<16>, sym_port_t>(SYM_NUM_PORTS, 0) ahead_run;
    RegisterAction<bit<16>, sym_port_t, bit<16>>(ahead_run) count_ahead = {
        void apply(inout bit<16> value, out bit<16> rv) {
            rv = value;
            if (value != SYM_RUN_MAX) {
                value = value + 1;
            }
        }
    };
    RegisterAction<bit<16>, sym_port_t, bit<16>>(ahead_run) reset_run = {
        void apply(inout bit<16> value, out bit<16> rv) {
            rv = value;
            value = 0;
        }
    };
    apply {
        if (ahead == 1) {
            run = count_ahead.execute(port);
        } else {
            run = reset_run.execute(port);
        }
    }
}

control SymRandom(out bit<16> r_queue, out bit<16> r_sym) {
    Random<bit<32>>() rng;
    apply {
        bit<32> r = rng.get();
        r_queue = r[15:0];
        r_sym = r[31:16];
    }
}

/* a < b exactly when b |-| a (saturating) is not 0.  A gateway compares a
 * field with constants only, so the difference is computed first, in a
 * table's action (else the compiler propagates the expression back into the
 * condition), from operands copied whole into 32-bit containers by an
 * action before it (an ALU operation reads whole containers).  @hidden:
 * no control-plane name, nothing for the control plane to set. */
control SymLess(in bit<32> a, in bit<32> b, out bit<1> lt) {
    bit<32> a32 = 0;
    bit<32> b32 = 0;
    bit<32> d = 0;
    @hidden action copy_operands() {
        a32 = a;
        b32 = b;
    }
    @hidden action saturated_difference() {
        d = b32 |-| a32;
    }
    @hidden table operands {
        actions = { copy_operands; }
        default_action = copy_operands();
        size = 1;
    }
    @hidden table difference {
        actions = { saturated_difference; }
        default_action = saturated_difference();
        size = 1;
    }
    apply {
        operands.apply();
        difference.apply();
        lt = 0;
        if (d != 0) {
            lt = 1;
        }
    }
}

/* The ECMP bucket: CRC-32 as zlib (and BMv2's crc32) computes it, given
 * explicitly rather than by HashAlgorithm_t.CRC32's name: polynomial
 * 0x04C11DB7 reflected, init and final xor 0xFFFFFFFF; the bucket is its low
 * SYM_ECMP_BUCKET_BITS (tests/p4/test_compile.py holds the compiled hash to
 * contract/ecmp.py). */
control EcmpHash(in ipv4_addr_t src, in ipv4_addr_t dst, in bit<8> proto, in bit<16> sport, in bit<16> dport,
                 out sym_ecmp_bucket_t bucket) {
    CRCPolynomial<bit<32>>(32w0x04C11DB7, true, false, false, 32w0xFFFFFFFF, 32w0xFFFFFFFF) crc32_poly;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc32_poly) ecmp_crc;
    apply {
        bit<32> h = ecmp_crc.get({ src, dst, proto, sport, dport });
        bucket = h[SYM_ECMP_BUCKET_BITS - 1:0];
    }
}

#endif
