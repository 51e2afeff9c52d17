/* Symphony: in-network step alignment of ring collectives (P4_16).
 *
 * One source, two targets, chosen here and only here:
 *   v1model (BMv2 simple_switch):   p4c-bm2-ss --arch v1model symphony.p4
 *   T2NA (Tofino2):                 p4c --target tofino2 --arch t2na symphony.p4
 *                                   (or p4test -D__TARGET_TOFINO__=2 with t2na.p4 on the include path)
 * Layout after stratum's fabric-tna: include/ holds what every target shares
 * (constants, headers, parser, the Symphony controls written against small
 * per-target wrappers); v1model/ and t2na/ hold the wrappers and the package.
 * docs/design.md, "The Symphony data plane", is the specification; the software
 * twin (topologies/switch/twin/pipeline.py) implements the same pipeline and the
 * vectors in p4/tests/ check both.
 */
#include <core.p4>
#ifdef __TARGET_TOFINO__
#include <t2na.p4>
#else
/* p4c's v1model.p4 declares register<T, I> and counter<I> (index-typed, as
 * T2NA's Register<T, I> and Counter<W, I>) only from this version on */
#define V1MODEL_VERSION 20200408
#include <v1model.p4>
#endif

#include "include/constants.p4"
#include "include/headers.p4"
#include "include/parser.p4"

#ifdef __TARGET_TOFINO__
#include "t2na/wrappers.p4"
#include "include/control.p4"
#include "t2na/main.p4"
#else
#include "v1model/wrappers.p4"
#include "include/control.p4"
#include "v1model/main.p4"
#endif
