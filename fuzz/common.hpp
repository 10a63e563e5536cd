// Shared by the harnesses: a reference UTF-8 decoder written from the Unicode
// standard's table 3-7 (well-formed byte sequences), independent of lib/validate.cpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace fuzz {

// Returns true when s[0..len) is well-formed UTF-8 per table 3-7; *bad is the offset
// of the first ill-formed sequence's start.
inline bool ref_utf8(const unsigned char *s, size_t len, size_t *bad) {
    size_t i = 0;
    while (i < len) {
        unsigned c = s[i];
        size_t n;
        unsigned lo = 0x80, hi = 0xBF;  // range of the second byte
        if (c <= 0x7F) {
            i++;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF)
            n = 2;
        else if (c == 0xE0)
            n = 3, lo = 0xA0;
        else if (c >= 0xE1 && c <= 0xEC)
            n = 3;
        else if (c == 0xED)
            n = 3, hi = 0x9F;
        else if (c >= 0xEE && c <= 0xEF)
            n = 3;
        else if (c == 0xF0)
            n = 4, lo = 0x90;
        else if (c >= 0xF1 && c <= 0xF3)
            n = 4;
        else if (c == 0xF4)
            n = 4, hi = 0x8F;
        else {
            *bad = i;
            return false;
        }
        if (i + n > len) {
            *bad = i;
            return false;
        }
        if (s[i + 1] < lo || s[i + 1] > hi) {
            *bad = i;
            return false;
        }
        for (size_t k = 2; k < n; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xBF) {
                *bad = i;
                return false;
            }
        i += n;
    }
    return true;
}

inline bool ref_utf8(const std::string &s) {
    size_t bad = 0;
    return ref_utf8(reinterpret_cast<const unsigned char *>(s.data()), s.size(), &bad);
}

[[noreturn]] inline void die(const char *what, const std::string &detail) {
    std::fprintf(stderr, "FUZZ FAILURE: %s: %s\n", what, detail.c_str());
    std::abort();
}

}  // namespace fuzz
