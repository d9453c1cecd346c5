// Whole-stream byte I/O shared by the stdin/stdout functions (paper 003, Appendices A.1, A.2).
// The paper's functions read stdin to EOF into a std::string and write the result to stdout;
// this helper does the same with binary-safe streams (no whitespace skipping, no locale).
#pragma once
#include <cstdio>
#include <stdexcept>
#include <string>
#include <unistd.h>

namespace repro {

// Reads all of stdin (fd 0) into a string. Throws on a read error.
inline std::string read_all_stdin() {
    std::string data;
    char buf[1 << 16];
    for (;;) {
        ssize_t n = ::read(0, buf, sizeof buf);
        if (n == 0) return data;
        if (n < 0) throw std::runtime_error("read(stdin) failed");
        data.append(buf, static_cast<size_t>(n));
    }
}

// Writes all bytes to stdout (fd 1). Throws on a write error.
inline void write_all_stdout(const void *p, size_t len) {
    const char *c = static_cast<const char *>(p);
    while (len > 0) {
        ssize_t n = ::write(1, c, len);
        if (n < 0) throw std::runtime_error("write(stdout) failed");
        c += n;
        len -= static_cast<size_t>(n);
    }
}

}  // namespace repro
