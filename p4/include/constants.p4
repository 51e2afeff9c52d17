/* Symphony: constants shared by every target.
 *
 * topologies/p4names.py holds the same values for the control plane and the
 * software twin; tests/test_p4_names.py parses this file and fails when the
 * two disagree.  Tag width and base also agree with hosts/wire.py.
 */
#ifndef _SYM_CONSTANTS_P4_
#define _SYM_CONSTANTS_P4_

/* Serial arithmetic on a w-bit tag: a is after b when
 * 0 < (a - b) mod 2^w < 2^(w-1).  MASK = 2^w - 1, HALF = 2^(w-1). */
#define SYM_SERIAL_AFTER(a, b, MASK, HALF) ((((a) - (b)) & (MASK)) != 0 && (((a) - (b)) & (MASK)) < (HALF))

/* UDP mode: the step tag in the UDP source port, 0xC000 | (step & 0x3FFF). */
#define SYM_TAG_BITS   14
#define SYM_TAG_BASE   0xC000
#define SYM_TAG_MASK   0x3FFF
#define SYM_TAG_HALF   0x2000
#define SYM_AFTER(a, b) SYM_SERIAL_AFTER(a, b, SYM_TAG_MASK, SYM_TAG_HALF)

/* TCP mode (a connection keeps its ports): the step tag in the DSCP,
 * step & 0x3F.  Half range 32: a job's flows must stay within 31 steps of
 * each other, so a TCP ring has at most 32 ranks (the control plane refuses
 * larger TCP jobs); the outpacing threshold must be below 32. */
#define SYM_DSCP_TAG_BITS 6
#define SYM_DSCP_TAG_MASK 0x3F
#define SYM_DSCP_TAG_HALF 0x20
#define SYM_AFTER_DSCP(a, b) SYM_SERIAL_AFTER(a, b, SYM_DSCP_TAG_MASK, SYM_DSCP_TAG_HALF)

/* step_count window: W slots per job; W must exceed the widest spread between
 * a job's flows (a ring of N ranks spreads at most N-1 steps).  Both tags'
 * ranges, 2^14 and 2^6, are multiples of W, so step mod W stays consistent
 * across either tag's wrap-around (for the 6-bit tag the slot is the tag
 * itself).  W is not bound by the serial half range: a slot is reused only
 * W steps later, while the spread is already bounded by the half range. */
#define SYM_W          64
#define SYM_W_BITS     6
/* A job's step_count slot for a step: 2^6 and 2^14 are multiples of W, so
 * step mod W is the same slot for either tag width across wrap-around. */
#define SYM_SLOT(job, step) (((bit<16>)(job) << SYM_W_BITS) | ((step) & (SYM_W - 1)))
#if ((1 << SYM_DSCP_TAG_BITS) % SYM_W) != 0 || ((1 << SYM_TAG_BITS) % SYM_W) != 0
#error "SYM_W must divide both tags' ranges (2^SYM_TAG_BITS and 2^SYM_DSCP_TAG_BITS)"
#endif

/* A flow's step window.  With d = (tag - the flow's newest tag) mod 2^w, a
 * tracked packet is
 *   a new step of its flow   when 1 <= d <= WINDOW (flow_step moves to it);
 *   a jump                   when WINDOW < d < 2^w - WINDOW: more than WINDOW
 *                            steps from the flow's newest, either way, which
 *                            a ring flow never is (it moves one step at a
 *                            time, and its ring spreads at most N-1 < W);
 *                            counted in step_jumps, it moves no register and
 *                            is never Symphony-marked;
 *   a step seen already      otherwise.
 * UDP: WINDOW = W.  TCP: the 6-bit tag's half range less one, so a new step
 * is exactly SYM_AFTER_DSCP and only d = 32 is a jump.  docs/design.md,
 * "What the switch trusts", says why jumps are counted and not followed. */
#define SYM_STEP_WINDOW      64
#define SYM_DSCP_STEP_WINDOW 31
#if SYM_STEP_WINDOW >= SYM_TAG_HALF || SYM_DSCP_STEP_WINDOW >= SYM_DSCP_TAG_HALF
#error "a step window must stay below its tag's serial half range (a new step is 'after')"
#endif
#define SYM_SERIAL_NEW(a, b, MASK, WIN)  (((((a) - (b)) - 1) & (MASK)) < (WIN))
#define SYM_SERIAL_JUMP(a, b, MASK, WIN) ((((a) - (b)) & (MASK)) > (WIN) && (((a) - (b)) & (MASK)) < ((MASK) + 1 - (WIN)))
#define SYM_NEW(a, b)       SYM_SERIAL_NEW(a, b, SYM_TAG_MASK, SYM_STEP_WINDOW)
#define SYM_NEW_DSCP(a, b)  SYM_SERIAL_NEW(a, b, SYM_DSCP_TAG_MASK, SYM_DSCP_STEP_WINDOW)
#define SYM_JUMP(a, b)      SYM_SERIAL_JUMP(a, b, SYM_TAG_MASK, SYM_STEP_WINDOW)
#define SYM_JUMP_DSCP(a, b) SYM_SERIAL_JUMP(a, b, SYM_DSCP_TAG_MASK, SYM_DSCP_STEP_WINDOW)

#define SYM_MAX_FLOWS  1024        /* flow_step, pkts, sym_marks, flow_queue_marks, step_jumps */
#define SYM_MAX_JOBS   64          /* frontier */
#define SYM_STEP_SLOTS 4096        /* step_count = SYM_MAX_JOBS * SYM_W */
#define SYM_NUM_PORTS  512         /* queue_marks, indexed by the 9-bit egress port */

/* Probabilities are integers in units of 2^-16; SYM_PROB_ONE marks always. */
#define SYM_PROB_ONE   65536

/* Symphony ECN defaults (sym_ecn's default action): mark when at least one
 * packet waits at the port, with probability 1. */
#define SYM_K_SYM_DEFAULT 1
/* The gate's default (sym_ecn's default action): 0, off. */
#define SYM_GATE_DEFAULT  0
/* ahead_run saturates here (the register's width) */
#define SYM_RUN_MAX       0xFFFF

#define SYM_FORWARD_SIZE   4096      /* one /32 per host: the simulation takes 4,096 hosts */
#define SYM_FLOWS_SIZE     1024
#define SYM_QUEUE_ECN_SIZE 256
#define SYM_SYM_ECN_SIZE   1         /* keyless: its default entry only */
#define SYM_SYM_VERDICT_SIZE 1       /* keyless: its default entry only */
#define SYM_VERDICT_BIT    2         /* hdr.ipv4.flags' reserved bit: a leaf's verdict (contract/tags.py) */

/* ECMP (contract/ecmp.py): a bucket is the low SYM_ECMP_BUCKET_BITS of the
 * 5-tuple's CRC-32; ecmp_select holds every bucket of every group, the
 * control plane filling bucket b of a group of n ports with port b mod n,
 * so the data plane takes no modulo */
#define SYM_ECMP_BUCKET_BITS 6
#define SYM_ECMP_BUCKETS     64
#define SYM_ECMP_GROUPS      256
#define SYM_ECMP_SELECT_SIZE 16384     /* SYM_ECMP_GROUPS * SYM_ECMP_BUCKETS */

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8>  IP_PROTO_TCP   = 6;
const bit<8>  IP_PROTO_UDP   = 17;

#endif
