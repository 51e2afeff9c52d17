/* Symphony on Tofino2 (T2NA): one small control per register or counter
 * operation, with the signatures include/control.p4 expects.  Each register
 * has one RegisterAction per operation (and tag width) and is executed once per packet, so
 * every wrapper fits one stateful ALU. */
#ifndef _SYM_T2NA_WRAPPERS_P4_
#define _SYM_T2NA_WRAPPERS_P4_

/* tcp: the flow's mode; each tag width has its own RegisterAction (constant
 * masks and windows inside the stateful ALU), and one of them runs per
 * packet.  The action keeps a new step (constants.p4: SYM_NEW) and returns
 * the tag held before, from which the control tells a new step and a jump. */
control FlowStepUpdate(in bit<16> flow_id, in sym_tag_t step, in bit<1> tcp, out bit<1> is_new,
                       out bit<1> jump) {
    Register<bit<16>, bit<16>>(SYM_MAX_FLOWS, 0) flow_step;
    RegisterAction<bit<16>, bit<16>, bit<16>>(flow_step) keep_newer_udp = {
        void apply(inout bit<16> value, out bit<16> rv) {
            rv = value;
            if (SYM_NEW(step, value)) {
                value = step;
            }
        }
    };
    RegisterAction<bit<16>, bit<16>, bit<16>>(flow_step) keep_newer_tcp = {
        void apply(inout bit<16> value, out bit<16> rv) {
            rv = value;
            if (SYM_NEW_DSCP(step, value)) {
                value = step;
            }
        }
    };
    apply {
        bit<16> old;
        bool newer;
        bool far;
        if (tcp == 1) {
            old = keep_newer_tcp.execute(flow_id);
            newer = SYM_NEW_DSCP(step, old);
            far = SYM_JUMP_DSCP(step, old);
        } else {
            old = keep_newer_udp.execute(flow_id);
            newer = SYM_NEW(step, old);
            far = SYM_JUMP(step, old);
        }
        is_new = 0;
        jump = 0;
        if (newer) {
            is_new = 1;
        }
        if (far) {
            jump = 1;
        }
    }
}

control StepCountUpdate(in bit<16> slot, in bit<8> n_local_m1, out bit<1> complete) {
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
    apply { complete = count_arrival.execute(slot); }
}

control FrontierUpdate(in bit<16> job, in sym_tag_t step, in bit<1> tcp, in bit<1> complete,
                       out sym_tag_t value) {
    Register<bit<16>, bit<16>>(SYM_MAX_JOBS, 0) frontier;
    RegisterAction<bit<16>, bit<16>, bit<16>>(frontier) advance_udp = {
        void apply(inout bit<16> current, out bit<16> rv) {
            if (SYM_AFTER(step, current)) {
                current = step;
            }
            rv = current;
        }
    };
    RegisterAction<bit<16>, bit<16>, bit<16>>(frontier) advance_tcp = {
        void apply(inout bit<16> current, out bit<16> rv) {
            if (SYM_AFTER_DSCP(step, current)) {
                current = step;
            }
            rv = current;
        }
    };
    RegisterAction<bit<16>, bit<16>, bit<16>>(frontier) read_only = {
        void apply(inout bit<16> current, out bit<16> rv) {
            rv = current;
        }
    };
    apply {
        if (complete == 1 && tcp == 1) {
            value = advance_tcp.execute(job);
        } else if (complete == 1) {
            value = advance_udp.execute(job);
        } else {
            value = read_only.execute(job);
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

control SymRandom(out bit<16> r_queue, out bit<16> r_sym) {
    Random<bit<32>>() rng;
    apply {
        bit<32> r = rng.get();
        r_queue = r[15:0];
        r_sym = r[31:16];
    }
}

#endif
