// Image-processing serverless function (paper 003, Sec. 2.3 and Appendix A.1).
//
// PNG in on stdin, PNG out on stdout, as the OpenFaaS classic watchdog and Nuclio's shell
// runtime expect. The transformation chain is the paper's, in its order: blur(1, 0.5),
// multiplicative-Gaussian and Laplacian noise, enhance, negate, normalize, reduceNoise,
// swirl(37), wave. Built with -DNULL_PROCESSING it is the paper's null-processing (NP)
// variant: load the image, sleep 1 s instead of transforming, send the image back.
// Errors go to stderr with a non-zero exit status, so a runtime reports a failed request.
#include <Magick++.h>

#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <unistd.h>

#include "stdio_bytes.hpp"

int main(int /*argc*/, char **argv) {
    try {
        Magick::InitializeMagick(argv[0]);
        const std::string input = repro::read_all_stdin();
        if (input.empty()) throw std::runtime_error("empty input: expected a PNG image on stdin");
        Magick::Blob in_blob(input.data(), input.size());
        Magick::Image image(in_blob);
#ifdef NULL_PROCESSING
        ::sleep(1);
#else
        image.blur(1, 0.5);
        image.addNoise(Magick::MultiplicativeGaussianNoise);
        image.addNoise(Magick::LaplacianNoise);
        image.enhance();
        image.negate();
        image.normalize();
        image.reduceNoise();
        image.swirl(37);
        image.wave();
#endif
        Magick::Blob out_blob;
        image.magick("PNG");
        image.write(&out_blob);
        repro::write_all_stdout(out_blob.data(), out_blob.length());
        return 0;
    } catch (const std::exception &e) {
        std::cerr << argv[0] << ": " << e.what() << std::endl;
        return 1;
    }
}
