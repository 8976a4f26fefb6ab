// SPDX-License-Identifier: MIT
// rof-kvload's parts that need no device: the self-describing values it
// writes and checks, YCSB's scrambled zipfian key chooser, and a latency
// histogram with log buckets (HdrHistogram style).  kvload_test.cpp tests
// them; kvload.cpp drives them over rofkv::KvClient.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace kvload {

// ---- values ----------------------------------------------------------
// A value is a 24-byte header then printable filler:
//   0  u32 magic "KVL1"     4  u32 key id       8  u32 sequence
//  12  u16 writer (thread)  14 u16 length (the whole value's)
//  16  u64 checksum: FNV-1a 64 over bytes [0,16) and [24,length)
// The filler is a function of (key, writer, sequence), so a value of
// another key, a torn value (the header of one write, the rest of another)
// or a short one fails the check.
inline constexpr std::uint32_t kMagic = 0x314c564b;  // "KVL1" little-endian
inline constexpr std::size_t kHeader = 24, kMinValue = 32, kMaxValue = 65535;  // u16 length

struct Stamp {
    std::uint32_t key = 0;
    std::uint32_t seq = 0;
    std::uint16_t writer = 0;
};

inline std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 0xcbf29ce484222325ull) {
    for (unsigned char c : s) {
        h ^= c;
        h *= 0x100000001b3ull;
    }
    return h;
}

inline std::uint64_t splitmix(std::uint64_t& x) {
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

template <typename T>
void put(std::string& s, std::size_t at, T v) {
    std::memcpy(s.data() + at, &v, sizeof v);
}
template <typename T>
T get(std::string_view s, std::size_t at) {
    T v;
    std::memcpy(&v, s.data() + at, sizeof v);
    return v;
}

inline std::uint64_t checksum(std::string_view v) {
    return fnv1a(v.substr(kHeader), fnv1a(v.substr(0, 16)));
}

// The value @st writes, @len bytes (kMinValue..kMaxValue).
inline std::string encode(const Stamp& st, std::size_t len) {
    std::string v(len, '\0');
    put(v, 0, kMagic);
    put(v, 4, st.key);
    put(v, 8, st.seq);
    put(v, 12, st.writer);
    put(v, 14, static_cast<std::uint16_t>(len));
    std::uint64_t x = (std::uint64_t{st.key} << 32) ^ (std::uint64_t{st.writer} << 48) ^ st.seq;
    static constexpr char alphabet[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    for (std::size_t i = kHeader; i < len; i += 8) {
        std::uint64_t r = splitmix(x);
        for (std::size_t j = i; j < len && j < i + 8; ++j, r >>= 8) {
            v[j] = alphabet[(r & 0xff) % (sizeof alphabet - 1)];
        }
    }
    put(v, 16, checksum(v));
    return v;
}

enum class Check { ok, too_short, bad_magic, bad_length, bad_checksum, other_key };

inline const char* check_name(Check c) {
    static constexpr const char* names[] = {"ok",
                                            "too short",
                                            "not a kvload value",
                                            "length differs from its header",
                                            "bad checksum",
                                            "value of another key"};
    return names[static_cast<int>(c)];
}

// Checks @v read for key @key; fills @st from its header.
inline Check check(std::string_view v, std::uint32_t key, Stamp& st) {
    if (v.size() < kHeader) {
        return Check::too_short;
    }
    if (get<std::uint32_t>(v, 0) != kMagic) {
        return Check::bad_magic;
    }
    if (get<std::uint16_t>(v, 14) != v.size()) {
        return Check::bad_length;
    }
    if (get<std::uint64_t>(v, 16) != checksum(v)) {
        return Check::bad_checksum;
    }
    st.key = get<std::uint32_t>(v, 4);
    st.seq = get<std::uint32_t>(v, 8);
    st.writer = get<std::uint16_t>(v, 12);
    // The filler is checked through the checksum; a value copied whole
    // from another key carries that key's id.
    if (st.key != key) {
        return Check::other_key;
    }
    return Check::ok;
}

// The key string of key id @id, @size characters (at least 8).
inline std::string key_name(std::uint32_t id, std::size_t size) {
    std::string k = "kvl:" + std::to_string(id);
    if (k.size() < size) {
        k.insert(4, size - k.size(), '0');
    }
    return k;
}

// ---- keys: YCSB's ScrambledZipfianGenerator ---------------------------
// Zipfian over ranks [0,n) with constant theta (Gray et al., "Quickly
// generating billion-record synthetic databases", as YCSB codes it), then
// the rank hashed (FNV-1a 64) onto [0,n) so the hot keys are spread over
// the table instead of being its first items.
class Zipf {
  public:
    explicit Zipf(std::uint64_t n, double theta = 0.99) : n_(n), theta_(theta) {
        zetan_ = zeta(n, theta);
        double zeta2 = zeta(2, theta);
        alpha_ = 1.0 / (1.0 - theta);
        eta_ = (1 - std::pow(2.0 / static_cast<double>(n), 1 - theta)) / (1 - zeta2 / zetan_);
    }
    // A rank: 0 is the most popular.
    template <typename Rng>
    std::uint64_t rank(Rng& rng) {
        double u = std::uniform_real_distribution<double>(0, 1)(rng);
        double uz = u * zetan_;
        if (uz < 1.0) {
            return 0;
        }
        if (uz < 1.0 + std::pow(0.5, theta_)) {
            return 1;
        }
        auto r = static_cast<std::uint64_t>(static_cast<double>(n_) *
                                            std::pow(eta_ * u - eta_ + 1, alpha_));
        return r < n_ ? r : n_ - 1;
    }
    // A key id: the rank scrambled.
    template <typename Rng>
    std::uint64_t operator()(Rng& rng) {
        return scramble(rank(rng));
    }
    std::uint64_t scramble(std::uint64_t rank) const {
        std::string_view b(reinterpret_cast<const char*>(&rank), sizeof rank);
        return fnv1a(b) % n_;
    }

  private:
    static double zeta(std::uint64_t n, double theta) {
        double s = 0;
        for (std::uint64_t i = 1; i <= n; ++i) {
            s += 1 / std::pow(static_cast<double>(i), theta);
        }
        return s;
    }
    std::uint64_t n_;
    double theta_, zetan_, alpha_, eta_;
};

// ---- latency ----------------------------------------------------------
// Counts per log bucket: values below 2^kSub exactly, above that 2^kSub
// linear sub-buckets per power of two (relative error below 1/2^kSub,
// about 3%).  Percentiles report the bucket's upper bound, as
// HdrHistogram's highestEquivalentValue does.
class Histogram {
  public:
    static constexpr unsigned kSub = 5;
    static constexpr std::size_t kBuckets = (64 - kSub + 1) << kSub;

    static std::size_t index(std::uint64_t v) {
        if (v < (1ull << kSub)) {
            return static_cast<std::size_t>(v);
        }
        unsigned e = 63 - static_cast<unsigned>(__builtin_clzll(v));  // >= kSub
        std::uint64_t sub = (v >> (e - kSub)) & ((1ull << kSub) - 1);
        return (static_cast<std::size_t>(e - kSub + 1) << kSub) + static_cast<std::size_t>(sub);
    }
    // The largest value that lands in bucket @i.
    static std::uint64_t upper(std::size_t i) {
        if (i < (1u << kSub)) {
            return i;
        }
        unsigned e = static_cast<unsigned>(i >> kSub) + kSub - 1;
        std::uint64_t sub = i & ((1u << kSub) - 1);
        std::uint64_t lo = (1ull << e) + (sub << (e - kSub));
        return lo + (1ull << (e - kSub)) - 1;
    }

    void record(std::uint64_t v) {
        ++counts_[index(v)];
        ++total_;
        if (v > max_) {
            max_ = v;
        }
    }
    void merge(const Histogram& o) {
        for (std::size_t i = 0; i < kBuckets; ++i) {
            counts_[i] += o.counts_[i];
        }
        total_ += o.total_;
        if (o.max_ > max_) {
            max_ = o.max_;
        }
    }
    std::uint64_t count() const { return total_; }
    std::uint64_t max() const { return max_; }
    // The value at or below which @p percent of the samples fall; 0 if none.
    std::uint64_t percentile(double p) const {
        if (total_ == 0) {
            return 0;
        }
        auto want = static_cast<std::uint64_t>(std::ceil(p / 100.0 * static_cast<double>(total_)));
        if (want == 0) {
            want = 1;
        }
        std::uint64_t seen = 0;
        for (std::size_t i = 0; i < kBuckets; ++i) {
            seen += counts_[i];
            if (seen >= want) {
                return upper(i) < max_ ? upper(i) : max_;
            }
        }
        return max_;
    }

  private:
    std::array<std::uint64_t, kBuckets> counts_{};
    std::uint64_t total_ = 0, max_ = 0;
};

}  // namespace kvload
