// A frame as the engine carries it: a descriptor of the fields any hop
// reads, not its bytes.  The Python engine pushes real frames through the
// twin's parser; here the parser's view (IPv4 and UDP fields, the frame's
// length) and the agents' header (hosts/wire.py) travel as plain fields, so
// a hop costs no parsing.  `len` is the frame's length in bytes as the
// switch and tc htb count it (Ethernet header on, no FCS), the one figure
// serialisation and queue accounting read.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace sym {

// hosts/wire.py's packet types; Other: not an agent's packet (cross traffic)
enum class Kind : uint8_t { Other = 0, Data = 1, Ack = 2, Cnp = 3 };

// bytes before the UDP payload (Ethernet 14, IPv4 20, UDP 8)
constexpr uint32_t HEADERS = 42;
constexpr uint8_t PROTO_UDP = 17;
constexpr uint8_t DEFAULT_TTL = 64;
// contract/tags.py's VERDICT_FLAG: the reserved IPv4 flag, a leaf's verdict carried onward
constexpr uint8_t VERDICT_BIT = 2, VERDICT_FLAG = 1u << VERDICT_BIT;

// 64 bytes, one cache line: a frame is moved through NIC rings, wires and
// queues at every hop, and on a 1,024-host fabric those moves miss the
// caches, so the fields are ordered to leave no padding and the two shared
// buffers (an ACK's SACK words, a data packet's chunk) share one pointer.
struct Pkt {
    // what the switch's parser reads
    uint32_t src_ip = 0, dst_ip = 0;       // host byte order
    uint16_t sport = 0, dport = 0;
    uint32_t len = 0;                      // frame bytes
    uint8_t proto = PROTO_UDP;
    uint8_t tos = 0;                       // DSCP << 2 | ECN
    uint8_t ttl = DEFAULT_TTL;
    // the agents' header (hosts/wire.py), Kind::Other for anything else
    Kind kind = Kind::Other;
    uint16_t job = 0, rank = 0;
    uint32_t step = 0;
    uint32_t offset = 0, length = 0;       // data: bytes into the step's chunk, payload bytes
    uint32_t cum = 0;                      // ack: bytes received in order
    uint16_t flags = 0;                    // data: transmission number's low 16 bits; ack: ACK_* flags
    uint16_t echo = 0;                     // ack: the newest data packet's flags
    uint8_t ip_flags = 0;                  // the IPv4 header's 3-bit flags (the leaves' verdict: VERDICT_FLAG)

    // ack: the SACK bitmap, bit j of word j / 64 = packet cum_index + 1 + j (null: none)
    const std::vector<uint64_t>* sack() const {
        return kind == Kind::Ack ? static_cast<const std::vector<uint64_t>*>(buf_.get()) : nullptr;
    }
    // data: the step's whole chunk the payload is cut from (null in a run without data)
    const std::vector<uint8_t>* chunk() const {
        return kind == Kind::Data ? static_cast<const std::vector<uint8_t>*>(buf_.get()) : nullptr;
    }
    // set kind first: the buffer is read as the kind says
    void set_sack(std::shared_ptr<const std::vector<uint64_t>> s) { buf_ = std::move(s); }
    void set_chunk(std::shared_ptr<const std::vector<uint8_t>> c) { buf_ = std::move(c); }

private:
    std::shared_ptr<const void> buf_;
};
static_assert(sizeof(Pkt) == 64, "a frame descriptor is one cache line");

}  // namespace sym
