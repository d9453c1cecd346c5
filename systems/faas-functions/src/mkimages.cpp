// Test-image generator for the image-processing workload (paper 003, Sec. 2.4).
//
// The paper used 1,000 16-bit RGB PNGs of the TESTIMAGES archive's SAMPLING/16BIT/RGB set:
// 960 of 800x800 and 40 of 600x600. Where that archive cannot be fetched this writes images of
// the same format and sizes with deterministic, non-trivial content: per-image gradients and
// a wave pattern plus seeded noise (so PNG compression sees real entropy, like photographs),
// at the paper's mean size per image (2.97 MiB over the 960/40 mix; see kNoiseSpan).
// Every --small-every-th image (1-based) is small: 1,000 images with --small-every 25 gives
// the paper's 960/40 mix. The same arguments always give byte-identical files.
//
//   mkimages --out DIR --count N [--size 800] [--small-size 600] [--small-every 25] [--seed 1]
#include <Magick++.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace {

[[noreturn]] void usage(const std::string &why) {
    std::cerr << "mkimages: " << why << "\n"
              << "usage: mkimages --out DIR --count N [--size 800] [--small-size 600]"
                 " [--small-every 25] [--seed 1]\n";
    std::exit(2);
}

long parse_positive(const char *name, const char *text) {
    char *end = nullptr;
    long v = std::strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || v <= 0) usage(std::string(name) + " must be a positive integer, got '" + text + "'");
    return v;
}

uint64_t splitmix64(uint64_t &state) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// Noise amplitude (16-bit units, +-span/2) tuned so that the paper's mix of 960 images of 800x800
// and 40 of 600x600 averages the paper's 2,969 MiB / 1,000 = 2.97 MiB per image (measured: 800x800
// 3.01 MiB, 600x600 1.67 MiB, mix 2.96 MiB); +-4096 gave 3.34 MiB (12 % above).
constexpr uint64_t kNoiseSpan = 1250;

void write_image(const std::string &path, size_t side, uint64_t seed) {
    std::vector<uint16_t> px(side * side * 3);
    uint64_t rng = seed;
    const double phase = static_cast<double>(splitmix64(rng) % 6283) / 1000.0;
    const double freq = 2.0 + static_cast<double>(splitmix64(rng) % 7);
    for (size_t y = 0; y < side; ++y) {
        for (size_t x = 0; x < side; ++x) {
            const double fx = static_cast<double>(x) / static_cast<double>(side);
            const double fy = static_cast<double>(y) / static_cast<double>(side);
            const double wave = 0.5 + 0.5 * std::sin(freq * 6.2831853 * (fx + fy) + phase);
            const uint64_t noise = splitmix64(rng);
            const double base[3] = {fx, fy, wave};
            for (int c = 0; c < 3; ++c) {
                const double n = static_cast<double>(((noise >> (16 * c)) & 0xffff) % kNoiseSpan) - kNoiseSpan / 2.0;
                double v = base[c] * 61000.0 + 2000.0 + n;
                if (v < 0) v = 0;
                if (v > 65535) v = 65535;
                px[(y * side + x) * 3 + static_cast<size_t>(c)] = static_cast<uint16_t>(v);
            }
        }
    }
    Magick::Image image(side, side, "RGB", Magick::ShortPixel, px.data());
    image.type(Magick::TrueColorType);
    image.depth(16);
    image.magick("PNG");
    image.defineValue("png", "bit-depth", "16");
    image.defineValue("png", "color-type", "2");  // RGB, no alpha
    image.defineValue("png", "exclude-chunks", "date,time");  // no timestamps: byte-identical reruns
    image.write(path);
}

}  // namespace

int main(int argc, char **argv) {
    std::string out;
    long count = 0, size = 800, small_size = 600, small_every = 25, seed = 1;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc) usage("missing value after " + a);
        const char *v = argv[++i];
        if (a == "--out") out = v;
        else if (a == "--count") count = parse_positive("--count", v);
        else if (a == "--size") size = parse_positive("--size", v);
        else if (a == "--small-size") small_size = parse_positive("--small-size", v);
        else if (a == "--small-every") small_every = parse_positive("--small-every", v);
        else if (a == "--seed") seed = parse_positive("--seed", v);
        else usage("unknown option " + a);
    }
    if (out.empty()) usage("--out DIR is required");
    if (count == 0) usage("--count N is required");
    Magick::InitializeMagick(argv[0]);
    for (long i = 1; i <= count; ++i) {
        const bool small = (i % small_every) == 0;
        const size_t side = static_cast<size_t>(small ? small_size : size);
        char name[64];
        std::snprintf(name, sizeof name, "/img%05ld_%zux%zu.png", i, side, side);
        try {
            write_image(out + name, side, static_cast<uint64_t>(seed) * 1000003ULL + static_cast<uint64_t>(i));
        } catch (const std::exception &e) {
            std::cerr << "mkimages: cannot write " << out << name << ": " << e.what() << "\n";
            return 1;
        }
        if (i % 50 == 0 || i == count) std::cerr << "mkimages: " << i << "/" << count << " images\n";
    }
    return 0;
}
