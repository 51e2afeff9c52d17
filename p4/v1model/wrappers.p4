/* Symphony on v1model (BMv2 simple_switch): one small control per register or
 * counter operation, with the signatures include/control.p4 expects.  Each
 * reads and writes its register once. */
#ifndef _SYM_V1MODEL_WRAPPERS_P4_
#define _SYM_V1MODEL_WRAPPERS_P4_

/* tcp: the flow's mode, which picks the tag width and window (constants.p4:
 * SYM_NEW, SYM_JUMP); a new step is kept, a jump only reported */
control FlowStepUpdate(in bit<16> flow_id, in sym_tag_t step, in bit<1> tcp, out bit<1> is_new,
                       out bit<1> jump) {
    register<bit<16>, bit<32>>(SYM_MAX_FLOWS) flow_step;
    apply {
        bit<16> old;
        flow_step.read(old, (bit<32>)flow_id);
        bool newer;
        bool far;
        if (tcp == 1) {
            newer = SYM_NEW_DSCP(step, old);
            far = SYM_JUMP_DSCP(step, old);
        } else {
            newer = SYM_NEW(step, old);
            far = SYM_JUMP(step, old);
        }
        is_new = 0;
        jump = 0;
        if (newer) {
            is_new = 1;
            flow_step.write((bit<32>)flow_id, step);
        }
        if (far) {
            jump = 1;
        }
    }
}

control StepCountUpdate(in bit<8> job_slot, in sym_tag_t step, in bit<8> n_local_m1, out bit<1> complete) {
    register<bit<16>, bit<32>>(SYM_STEP_SLOTS) step_count;
    apply {
        bit<16> slot = SYM_SLOT(job_slot, step);
        bit<16> count;
        step_count.read(count, (bit<32>)slot);
        if (count >= (bit<16>)n_local_m1) {
            complete = 1;                       /* the n_local-th arrival: reset the slot */
            step_count.write((bit<32>)slot, 0);
        } else {
            complete = 0;
            step_count.write((bit<32>)slot, count + 1);
        }
    }
}

control FrontierUpdate(in bit<16> job, in sym_tag_t step, in bit<1> tcp, in bit<1> complete,
                       out sym_tag_t ahead) {
    register<bit<16>, bit<32>>(SYM_MAX_JOBS) frontier;
    apply {
        bit<16> current;
        frontier.read(current, (bit<32>)job);
        bool newer;
        if (tcp == 1) {
            newer = SYM_AFTER_DSCP(step, current);
        } else {
            newer = SYM_AFTER(step, current);
        }
        if (complete == 1 && newer) {
            current = step;
            frontier.write((bit<32>)job, current);
        }
        if (tcp == 1) {
            ahead = (step - current) & SYM_DSCP_TAG_MASK;
        } else {
            ahead = (step - current) & SYM_TAG_MASK;
        }
    }
}

control PktsCount(in bit<16> flow_id) {
    counter<bit<32>>(SYM_MAX_FLOWS, CounterType.packets_and_bytes) pkts;
    apply { pkts.count((bit<32>)flow_id); }
}

control StepJumpCount(in bit<16> flow_id) {
    counter<bit<32>>(SYM_MAX_FLOWS, CounterType.packets_and_bytes) step_jumps;
    apply { step_jumps.count((bit<32>)flow_id); }
}

control SymMarkCount(in bit<16> flow_id) {
    counter<bit<32>>(SYM_MAX_FLOWS, CounterType.packets_and_bytes) sym_marks;
    apply { sym_marks.count((bit<32>)flow_id); }
}

control FlowQueueMarkCount(in bit<16> flow_id) {
    counter<bit<32>>(SYM_MAX_FLOWS, CounterType.packets_and_bytes) flow_queue_marks;
    apply { flow_queue_marks.count((bit<32>)flow_id); }
}

control QueueMarkCount(in sym_port_t port) {
    counter<bit<32>>(SYM_NUM_PORTS, CounterType.packets_and_bytes) queue_marks;
    apply { queue_marks.count((bit<32>)port); }
}

control VerdictMarkCount(in sym_port_t port) {
    counter<bit<32>>(SYM_NUM_PORTS, CounterType.packets_and_bytes) verdict_marks;
    apply { verdict_marks.count((bit<32>)port); }
}

/* ahead: the packet is one Symphony would mark; run: the count before it */
control AheadRunUpdate(in sym_port_t port, in bit<1> ahead, out bit<16> run) {
    register<bit<16>, bit<32>>(SYM_NUM_PORTS) ahead_run;
    apply {
        ahead_run.read(run, (bit<32>)port);
        if (ahead == 0) {
            ahead_run.write((bit<32>)port, 0);
        } else if (run != SYM_RUN_MAX) {
            ahead_run.write((bit<32>)port, run + 1);
        }
    }
}

control SymRandom(out bit<16> r_queue, out bit<16> r_sym) {
    apply {
        random(r_queue, 16w0, 16w0xFFFF);
        random(r_sym, 16w0, 16w0xFFFF);
    }
}

/* The ECMP bucket: BMv2's crc32 (zlib's CRC-32, behavioral-model's
 * calculations.cpp) of the fields in order, each in network byte order;
 * hash() gives base + crc mod max, so max = SYM_ECMP_BUCKETS, a power of
 * two, is the crc's low bits */
control EcmpHash(in ipv4_addr_t src, in ipv4_addr_t dst, in bit<8> proto, in bit<16> sport, in bit<16> dport,
                 out sym_ecmp_bucket_t bucket) {
    apply {
        hash(bucket, HashAlgorithm.crc32, (sym_ecmp_bucket_t)0, { src, dst, proto, sport, dport },
             (bit<32>)SYM_ECMP_BUCKETS);
    }
}

/* a < b (fields of at most 32 bits) */
control SymLess(in bit<32> a, in bit<32> b, out bit<1> lt) {
    apply {
        lt = 0;
        if (a < b) {
            lt = 1;
        }
    }
}

#endif
