// Byte-reversal serverless function in C++ (paper 003, Sec. 2.3 and Appendix A.2).
//
// Reads the whole request body from stdin, reverses it with std::reverse and writes it to
// stdout: the stream interface of the OpenFaaS classic watchdog and Nuclio's shell runtime,
// where the runtime copies the body into this process and the answer back out of it.
#include <algorithm>
#include <iostream>
#include <stdexcept>

#include "stdio_bytes.hpp"

int main(int /*argc*/, char **argv) {
    try {
        std::string data = repro::read_all_stdin();
        std::reverse(data.begin(), data.end());
        repro::write_all_stdout(data.data(), data.size());
        return 0;
    } catch (const std::exception &e) {
        std::cerr << argv[0] << ": " << e.what() << std::endl;
        return 1;
    }
}
