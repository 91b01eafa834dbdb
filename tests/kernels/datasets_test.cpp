#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "atrain/kernels/dataset.hpp"
#include "source_dir.hpp"

using namespace atrain;
namespace fs = std::filesystem;

namespace {

const std::string source_dir = atrain::test::source_dir();
const std::string a9a_path = source_dir + "/data/a9a.gz";
const std::string a9a_t_path = source_dir + "/data/a9a.t.gz";

/// A fresh temporary directory per test case, removed afterwards.
struct temp_dir {
  fs::path dir;
  temp_dir() {
    static int counter = 0;
    const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
    dir = fs::temp_directory_path() /
          ("atrain-datasets-" + std::to_string(stamp) + "-" + std::to_string(counter++));
    fs::create_directories(dir);
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string write(const std::string& name, const std::string& bytes) const {
    const fs::path p = dir / name;
    std::ofstream(p, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return p.string();
  }
};

std::uint32_t crc32(const std::string& s) {
  std::uint32_t c = 0xffffffffu;
  for (unsigned char b : s) {
    c ^= b;
    for (int k = 0; k < 8; ++k)
      c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return ~c;
}

void put_le32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

/// A valid gzip member using stored (uncompressed) deflate blocks, written
/// independently of zlib so the reader is checked against the format itself.
std::string gzip_stored(const std::string& data) {
  std::string out = {'\x1f', '\x8b', '\x08', '\0', '\0', '\0', '\0', '\0', '\0', '\xff'};
  std::size_t pos = 0;
  do {
    const std::size_t len = std::min<std::size_t>(data.size() - pos, 65535);
    const bool final = pos + len == data.size();
    out.push_back(final ? '\x01' : '\x00');
    out.push_back(static_cast<char>(len & 0xff));
    out.push_back(static_cast<char>(len >> 8));
    out.push_back(static_cast<char>(~len & 0xff));
    out.push_back(static_cast<char>((~len >> 8) & 0xff));
    out.append(data, pos, len);
    pos += len;
  } while (pos < data.size());
  put_le32(out, crc32(data));
  put_le32(out, static_cast<std::uint32_t>(data.size()));
  return out;
}

std::string be32(std::uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>((v >> 16) & 0xff),
          static_cast<char>((v >> 8) & 0xff), static_cast<char>(v & 0xff)};
}

std::string idx_images(std::uint32_t count, std::uint32_t rows, std::uint32_t cols,
                       std::uint32_t magic = 2051) {
  std::string s = be32(magic) + be32(count) + be32(rows) + be32(cols);
  for (std::uint32_t i = 0; i < count * rows * cols; ++i)
    s.push_back(static_cast<char>((i * 37) % 256));
  return s;
}

std::string idx_labels(const std::vector<unsigned char>& labels, std::uint32_t magic = 2049) {
  std::string s = be32(magic) + be32(static_cast<std::uint32_t>(labels.size()));
  for (unsigned char l : labels)
    s.push_back(static_cast<char>(l));
  return s;
}

std::string cifar_records(const std::vector<unsigned char>& labels) {
  std::string s;
  for (std::size_t r = 0; r < labels.size(); ++r) {
    s.push_back(static_cast<char>(labels[r]));
    for (int i = 0; i < 3072; ++i)
      s.push_back(static_cast<char>((r * 7 + i) % 256));
  }
  return s;
}

/// The dataset_error message of f(), or "" if it did not throw one.
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const dataset_error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

std::size_t nnz(const dataset& d) {
  return static_cast<std::size_t>(
    std::count_if(d.features.begin(), d.features.end(), [](float v) { return v != 0.0f; }));
}

std::size_t count_label(const dataset& d, std::int32_t label) {
  return static_cast<std::size_t>(std::count(d.labels.begin(), d.labels.end(), label));
}

bool equal(const dataset& a, const dataset& b) {
  return a.dim == b.dim && a.classes == b.classes && a.labels == b.labels &&
         a.features == b.features;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(datasets)

BOOST_AUTO_TEST_CASE(sha256_known_vectors) {
  BOOST_TEST(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  BOOST_TEST(sha256_hex("abc") ==
             "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  BOOST_TEST(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
             "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  BOOST_TEST(sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjk"
                        "lmnopqklmnopqrlmnopqrsmnopqrstnopqrstu") ==
             "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  BOOST_TEST(sha256_hex(std::string(1000000, 'a')) ==
             "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // Padding boundaries (values from coreutils sha256sum).
  const std::vector<std::pair<std::size_t, std::string>> xs = {
    {55, "d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e4072"},
    {56, "04c26261370ee7541549d16dee320c723e3fd14671e66a099afe0a377c16888e"},
    {63, "75220b47218278e656f2013bb8f0c455a25eaf01e86c64924e9d48d89776d6f2"},
    {64, "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c"},
    {65, "9537c5fdf120482f7d58d25e9ed583f52c02b4e304ea814db1633ad565aed7e9"},
    {119, "000b48d4edf0fa7bee3c6236ecd2785baa5db4eeb8bb54341b029e0d9fa5fb0c"},
    {120, "13f05a0b594787f5ecd315edc96141bd3243203d1b7d4f0836f37308b276ba98"}};
  for (const auto& [n, hex] : xs)
    BOOST_TEST(sha256_hex(std::string(n, 'x')) == hex, "length " << n);
}

BOOST_AUTO_TEST_CASE(a9a_train) {
  const auto t0 = std::chrono::steady_clock::now();
  const dataset d = load_libsvm(a9a_path);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  BOOST_TEST_MESSAGE("a9a load (gunzip + parse + densify): " << secs * 1000 << " ms");
  // Load speed is bench_kernels' business, not a test's (no timed assertion).

  BOOST_TEST(d.size() == 32561u);
  BOOST_TEST(d.dim == 123u);
  BOOST_TEST(d.classes == 2u);
  BOOST_TEST(d.features.size() == 32561u * 123u);
  BOOST_TEST(count_label(d, 1) == 7841u);
  BOOST_TEST(count_label(d, 0) == 24720u);
  BOOST_TEST(nnz(d) == 451592u);
  // Every value in a9a is 1.
  BOOST_TEST(std::all_of(d.features.begin(), d.features.end(),
                         [](float v) { return v == 0.0f || v == 1.0f; }));
  // First line: "-1 3:1 11:1 14:1 19:1 39:1 42:1 55:1 64:1 67:1 73:1 75:1 76:1 80:1 83:1 "
  BOOST_TEST(d.labels[0] == 0);
  const std::vector<std::size_t> first = {3, 11, 14, 19, 39, 42, 55, 64, 67, 73, 75, 76, 80, 83};
  for (std::size_t j = 1; j <= 123; ++j) {
    const bool on = std::find(first.begin(), first.end(), j) != first.end();
    BOOST_TEST(d.row(0)[j - 1] == (on ? 1.0f : 0.0f), "feature " << j);
  }

  BOOST_TEST(sha256_hex(read_maybe_gzip(a9a_path)) ==
             "f5d5ffd8d865ff41328e7ee043e4b020816914ff6843ff15b98905ddbedce906");
  BOOST_TEST(read_maybe_gzip(a9a_path).size() == 2329875u);
}

BOOST_AUTO_TEST_CASE(a9a_test_needs_explicit_dim) {
  const dataset d = load_libsvm(a9a_t_path, 123);
  BOOST_TEST(d.size() == 16281u);
  BOOST_TEST(d.dim == 123u);
  BOOST_TEST(count_label(d, 1) == 3846u);
  BOOST_TEST(nnz(d) == 225731u);
  BOOST_TEST(sha256_hex(read_maybe_gzip(a9a_t_path)) ==
             "1f448a153f0320399a7e40836eb207655b0bde0f21fc941cc472193daa9f5de9");
  // Inferred, the dimension would be 122: feature 123 never occurs.
  BOOST_TEST(load_libsvm(a9a_t_path).dim == 122u);
}

BOOST_AUTO_TEST_CASE(max_rows_reads_a_prefix) {
  const dataset full = load_libsvm(a9a_path);
  const dataset head = load_libsvm(a9a_path, 123, 100);
  BOOST_TEST(head.size() == 100u);
  BOOST_TEST(std::equal(head.features.begin(), head.features.end(), full.features.begin()));
  BOOST_TEST(std::equal(head.labels.begin(), head.labels.end(), full.labels.begin()));
}

BOOST_AUTO_TEST_CASE(plain_and_gzip_agree) {
  temp_dir tmp;
  // Real deflate (a9a.gz) against its decompressed text.
  const std::string text = read_maybe_gzip(a9a_path);
  const std::string plain = tmp.write("a9a.txt", text);
  BOOST_TEST(read_maybe_gzip(plain) == text);
  BOOST_TEST(equal(load_libsvm(plain), load_libsvm(a9a_path)));

  // A small text, gzip written by hand (stored blocks), and as two members.
  const std::string small = "+1 1:0.5 3:-2 \n-1 \n+1 2:1e-3 4:7\n";
  const std::string p1 = tmp.write("small.txt", small);
  const std::string p2 = tmp.write("small.gz", gzip_stored(small));
  const std::string p3 =
    tmp.write("small2.gz", gzip_stored(small.substr(0, 10)) + gzip_stored(small.substr(10)));
  const std::string p4 = tmp.write("small3.gz", gzip_stored(small) + std::string(16, '\0'));
  BOOST_TEST(read_maybe_gzip(p2) == small);
  BOOST_TEST(read_maybe_gzip(p3) == small);
  BOOST_TEST(read_maybe_gzip(p4) == small);
  const dataset a = load_libsvm(p1);
  BOOST_TEST(equal(a, load_libsvm(p2)));
  BOOST_TEST(equal(a, load_libsvm(p3)));
  BOOST_TEST(a.size() == 3u);
  BOOST_TEST(a.dim == 4u);
  const std::vector<float> expect = {0.5f, 0, -2, 0, 0, 0, 0, 0, 0, 1e-3f, 0, 7};
  BOOST_TEST(a.features == expect, boost::test_tools::per_element());
  BOOST_TEST(a.labels == (std::vector<std::int32_t>{1, 0, 1}), boost::test_tools::per_element());

  // A large stored gzip spanning several blocks.
  const std::string big(200000, 'z');
  BOOST_TEST(read_maybe_gzip(tmp.write("big.gz", gzip_stored(big))) == big);
  BOOST_TEST(read_maybe_gzip(tmp.write("empty.gz", gzip_stored(""))).empty());
}

BOOST_AUTO_TEST_CASE(libsvm_labels_and_layout) {
  temp_dir tmp;
  // 0/1 labels: binary.
  dataset d = load_libsvm(tmp.write("01.txt", "0 1:1\n1 2:1\n1\n"));
  BOOST_TEST(d.classes == 2u);
  BOOST_TEST(d.labels == (std::vector<std::int32_t>{0, 1, 1}), boost::test_tools::per_element());
  // +1 only: still binary.
  d = load_libsvm(tmp.write("p.txt", "+1 1:1\n"));
  BOOST_TEST(d.classes == 2u);
  BOOST_TEST(d.labels[0] == 1);
  // -1 / 0 / 1 / +1 all in one file.
  d = load_libsvm(tmp.write("mix.txt", "-1 1:1\n0 1:1\n1 1:1\n+1 1:1\n"));
  BOOST_TEST(d.labels == (std::vector<std::int32_t>{0, 0, 1, 1}), boost::test_tools::per_element());
  // Multiclass ids, integral float spelling allowed.
  d = load_libsvm(tmp.write("multi.txt", "0 1:1\n5 2:1\n2.0 3:1\n"));
  BOOST_TEST(d.classes == 6u);
  BOOST_TEST(d.labels == (std::vector<std::int32_t>{0, 5, 2}), boost::test_tools::per_element());
  // Tabs, CRLF, trailing blanks, blank lines, empty rows,
  // explicit dimension larger than any index, signs and exponents in values.
  d = load_libsvm(
    tmp.write("layout.txt", "+1\t2:+0.25   5:-1.5e1 \r\n\n   \n-1 \r\n+1 1:1e-50 3:.5\n"), 6);
  BOOST_TEST(d.size() == 3u);
  BOOST_TEST(d.dim == 6u);
  const std::vector<float> expect = {0, 0.25f, 0, 0,      -15, 0,    /**/ 0, 0, 0,
                                     0, 0,     0, /**/ 0, 0,   0.5f, 0,      0, 0};
  BOOST_TEST(d.features == expect, boost::test_tools::per_element());
  // All rows empty, dimension given.
  d = load_libsvm(tmp.write("noinfo.txt", "-1\n+1\n"), 3);
  BOOST_TEST(d.features == std::vector<float>(6, 0.0f), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(malformed_libsvm_is_refused) {
  temp_dir tmp;
  struct bad_case {
    const char* name;
    std::string content;
    std::size_t dim;
    std::size_t line;
    const char* reason;
  };
  const std::vector<bad_case> cases = {
    {"label_word", "+1 1:1\nyes 1:1\n", 0, 2, "bad label 'yes'"},
    {"label_fraction", "1.5 1:1\n", 0, 1, "bad label '1.5'"},
    {"label_negative", "+1 1:1\n-1 1:1\n-2 2:1\n", 0, 3, "negative labels"},
    {"label_mixed", "-1 1:1\n3 1:1\n", 0, 2, "mixed with binary label -1"},
    {"no_colon", "+1 1:1\n+1 4 5:1\n", 0, 2, "bad index:value token '4'"},
    {"bad_value", "+1 1:1\n+1 1:1\n+1 4:x\n", 0, 3, "value is not a number"},
    {"bad_index", "+1 a:1\n", 0, 1, "index is not a positive integer"},
    {"negative_index", "+1 -3:1\n", 0, 1, "index is not a positive integer"},
    {"index_zero", "+1 1:1\n-1 0:1 2:1\n", 0, 2, "index 0"},
    {"index_over_dim", "+1 1:1\n-1 124:1\n", 123, 2, "index 124 exceeds dimension 123"},
    {"not_increasing", "+1 5:1 3:1\n", 0, 1, "not strictly increasing: 3 after 5"},
    {"duplicate_index", "+1 1:1\n\n+1 3:1 3:2\n", 0, 3, "not strictly increasing"},
    {"nan", "+1 1:nan\n", 0, 1, "non-finite value"},
    {"inf", "-1 \n+1 2:-inf\n", 0, 2, "non-finite value"},
    {"overflow", "+1 1:1e39\n", 0, 1, "out of float range"},
    {"value_garbage", "+1 1:1.0abc\n", 0, 1, "value is not a number"},
    {"empty", "", 0, 1, "empty file"},
    {"blank_only", "\n  \n\n", 0, 3, "no samples"},
    {"cut_after_colon", "+1 1:1 2:1 \n-1 1:1 7:", 0, 2, "missing value"},
    {"cut_in_index", "+1 1:1 2:1 \n-1 1:1 12", 0, 2, "bad index:value token '12'"},
    {"cut_in_label", "+1 1:1 2:1 \n-", 0, 2, "bad label '-'"},
    // A cut that leaves well-formed tokens: the missing newline gives it away.
    {"cut_in_value", "+1 1:1 2:1 \n-1 3:1 5:0.2", 0, 2,
     "last line has no newline at its end: the file looks truncated"},
    // Bounds (data_limits): the figure and the limit.
    {"label_over_class_limit", "+1 1:1\n1048576 1:1\n", 0, 2,
     "class id too large (the limit is 65535)"},
    {"index_over_dimension_limit", "+1 2147483648:1\n", 0, 1,
     "index 2147483648 too large (the limit is 10000000 features)"},
  };
  for (const bad_case& c : cases) {
    const std::string path = tmp.write(std::string(c.name) + ".txt", c.content);
    const std::string msg = error_of([&] { (void)load_libsvm(path, c.dim); });
    const std::string prefix = path + ":" + std::to_string(c.line) + ": ";
    BOOST_TEST(msg.rfind(prefix, 0) == 0u,
               c.name << ": '" << msg << "' should start with '" << prefix << "'");
    BOOST_TEST(contains(msg, c.reason),
               c.name << ": '" << msg << "' should mention '" << c.reason << "'");
  }
  // rows x dimension beyond the dense limit: refused before the matrix is made.
  std::string rows;
  for (int i = 0; i < 60; ++i)
    rows += "+1\n";
  const std::string wide = tmp.write("wide.txt", rows);
  BOOST_TEST(error_of([&] { (void)load_libsvm(wide, 10000000); }) ==
             wide + ": 60 rows x 10000000 features is more than 536870912 values, the limit "
                    "for a dense feature matrix (2048 MiB of floats)");
  // The same content through gzip gives the same error.
  const std::string gz = tmp.write("cut.gz", gzip_stored("+1 1:1\n-1 1:1 7:"));
  BOOST_TEST(error_of([&] { (void)load_libsvm(gz); }) ==
             gz + ":2: bad index:value token '7:' (missing value)");
}

BOOST_AUTO_TEST_CASE(io_and_gzip_errors) {
  temp_dir tmp;
  const std::string missing = (tmp.dir / "nope.txt").string();
  BOOST_TEST(error_of([&] { (void)load_libsvm(missing); }) ==
             missing + ": cannot open: No such file or directory");
  const std::string dir = tmp.dir.string();
  BOOST_TEST(
    contains(error_of([&] { (void)read_maybe_gzip(dir); }), dir + ": cannot open: Is a directory"));

  const std::string raw = [] {
    std::ifstream in(a9a_path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  BOOST_REQUIRE(raw.size() > 1000);

  // Truncated in the middle of the deflate data, and just before the trailer.
  for (std::size_t keep : {raw.size() / 2, raw.size() - 3, std::size_t{2}, std::size_t{12}}) {
    const std::string p = tmp.write("trunc" + std::to_string(keep) + ".gz", raw.substr(0, keep));
    const std::string msg = error_of([&] { (void)load_libsvm(p); });
    BOOST_TEST(msg.rfind(p + ": gzip: truncated", 0) == 0u, keep << ": " << msg);
  }
  // Corrupt deflate data (bytes flipped in the middle) and a wrong CRC.
  std::string bad = raw;
  for (std::size_t i = bad.size() / 2; i < bad.size() / 2 + 16; ++i)
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
  const std::string pc = tmp.write("corrupt.gz", bad);
  std::string msg = error_of([&] { (void)load_libsvm(pc); });
  BOOST_TEST(msg.rfind(pc + ": gzip: corrupt data", 0) == 0u, msg);
  bad = gzip_stored("+1 1:1\n");
  bad[bad.size() - 8] = static_cast<char>(bad[bad.size() - 8] ^ 1);
  const std::string pcrc = tmp.write("crc.gz", bad);
  msg = error_of([&] { (void)load_libsvm(pcrc); });
  BOOST_TEST(msg.rfind(pcrc + ": gzip: corrupt data", 0) == 0u, msg);
  BOOST_TEST(contains(msg, "incorrect data check"), msg);
  // Garbage after the member.
  const std::string pg = tmp.write("garbage.gz", gzip_stored("+1 1:1\n") + "junk");
  msg = error_of([&] { (void)load_libsvm(pg); });
  BOOST_TEST(msg.rfind(pg + ": gzip: trailing garbage", 0) == 0u, msg);
}

BOOST_AUTO_TEST_CASE(file_size_bounds) {
  temp_dir tmp;
  const std::string text(1000, '\n');
  // Counted while inflating (a9a.gz: two members), whatever the trailer says.
  const std::size_t size = read_maybe_gzip(a9a_path).size();
  BOOST_TEST(read_maybe_gzip(a9a_path, size).size() == size);
  BOOST_TEST(error_of([&] { (void)read_maybe_gzip(a9a_path, size - 1); }) ==
             a9a_path + ": gzip: the contents inflate to more than " + std::to_string(size - 1) +
               " bytes; the limit for a data file is " + std::to_string(size - 1) + " bytes (" +
               std::to_string((size - 1) >> 20) + " MiB)");
  const std::string plain = tmp.write("plain.txt", text);
  BOOST_TEST(error_of([&] { (void)read_maybe_gzip(plain, 999); }) ==
             plain + ": the file holds 1000 bytes, more than 999 bytes; the limit for a data "
                     "file is 999 bytes (0 MiB)");
  // A trailer claiming 4 GiB - 1 on an empty member: zlib's length check, no 4 GiB buffer.
  std::string liar = gzip_stored("");
  for (int i = 1; i <= 4; ++i)
    liar[liar.size() - static_cast<std::size_t>(i)] = '\xff';
  const std::string pl = tmp.write("liar.gz", liar);
  BOOST_TEST(contains(error_of([&] { (void)read_maybe_gzip(pl); }), "incorrect length check"));
}

BOOST_AUTO_TEST_CASE(idx_synthetic) {
  temp_dir tmp;
  const std::vector<unsigned char> labels = {3, 0, 4, 1, 2};
  const std::string img = idx_images(5, 2, 3);
  const std::string ip = tmp.write("img", img);
  const std::string lp = tmp.write("lab", idx_labels(labels));
  const dataset d = load_idx(ip, lp);
  BOOST_TEST(d.size() == 5u);
  BOOST_TEST(d.dim == 6u);
  BOOST_TEST(d.classes == 5u);
  BOOST_TEST(d.labels == (std::vector<std::int32_t>{3, 0, 4, 1, 2}),
             boost::test_tools::per_element());
  for (std::size_t i = 0; i < 30; ++i) {
    BOOST_TEST(d.features[i] ==
               static_cast<float>(static_cast<unsigned char>(img[16 + i])) / 255.0f);
  }
  BOOST_TEST(*std::max_element(d.features.begin(), d.features.end()) <= 1.0f);

  const dataset g = load_idx(tmp.write("img.gz", gzip_stored(img)),
                             tmp.write("lab.gz", gzip_stored(idx_labels(labels))));
  BOOST_TEST(equal(d, g));

  const dataset head = load_idx(ip, lp, 2);
  BOOST_TEST(head.size() == 2u);
  BOOST_TEST(head.classes == 5u);  // from the whole labels file
  BOOST_TEST(std::equal(head.features.begin(), head.features.end(), d.features.begin()));
}

// A host decodes only its rows: the chooser sees the labels (cut by max_rows) and the
// classes of the whole file; the rows come back in its order, each the whole load's row.
BOOST_AUTO_TEST_CASE(idx_keeps_only_the_chosen_rows) {
  temp_dir tmp;
  const std::vector<unsigned char> labels = {3, 0, 4, 1, 2};
  const std::string ip = tmp.write("img", idx_images(5, 2, 3));
  const std::string lp = tmp.write("lab", idx_labels(labels));
  const dataset whole = load_idx(ip, lp);
  std::vector<std::int32_t> seen;
  std::size_t seen_classes = 0;
  const auto choose = [&](const std::vector<std::int32_t>& l, std::size_t classes) {
    seen = l;
    seen_classes = classes;
    return std::vector<std::uint32_t>{3, 0};
  };
  const dataset some = load_idx_rows(ip, lp, 4, choose);
  BOOST_TEST(seen == (std::vector<std::int32_t>{3, 0, 4, 1}), boost::test_tools::per_element());
  BOOST_TEST(seen_classes == 5u);
  BOOST_REQUIRE(some.size() == 2u);
  BOOST_TEST(some.dim == 6u);
  BOOST_TEST(some.classes == 5u);
  BOOST_TEST(some.labels == (std::vector<std::int32_t>{1, 3}), boost::test_tools::per_element());
  BOOST_TEST(std::equal(some.row(0), some.row(0) + 6, whole.row(3)));
  BOOST_TEST(std::equal(some.row(1), some.row(1) + 6, whole.row(0)));
  BOOST_TEST(equal(select_rows(whole, {3, 0}), some));
  // A row past the rows read is a programming error, named.
  BOOST_CHECK_THROW(
    (void)load_idx_rows(ip, lp, 4,
                        [](const auto&, std::size_t) { return std::vector<std::uint32_t>{4}; }),
    std::out_of_range);
  BOOST_CHECK_THROW((void)select_rows(whole, {5}), std::out_of_range);
}

BOOST_AUTO_TEST_CASE(malformed_idx_is_refused) {
  temp_dir tmp;
  const std::string good_img = tmp.write("good_img", idx_images(4, 2, 2));
  const std::string good_lab = tmp.write("good_lab", idx_labels({0, 1, 2, 3}));
  struct bad_case {
    const char* name;
    std::string images;  // "" = use the good file
    std::string labels;
    bool blame_labels;
    std::uint64_t offset;
    const char* reason;
  };
  std::string img_trunc = idx_images(4, 2, 2);
  img_trunc.resize(16 + 13);
  const std::vector<bad_case> cases = {
    {"img_magic", idx_images(4, 2, 2, 2049), "", false, 0,
     "bad magic 0x00000801 (2049), expected 0x00000803 (2051)"},
    {"img_magic_float", idx_images(4, 2, 2, 0x0d03), "", false, 0, "bad magic"},
    {"lab_magic", "", idx_labels({0, 1, 2, 3}, 2051), true, 0, "expected 0x00000801 (2049)"},
    {"img_header_cut", idx_images(4, 2, 2).substr(0, 10), "", false, 10, "truncated header"},
    {"img_tiny", std::string("\0\0", 2), "", false, 2, "truncated header"},
    {"lab_header_cut", "", idx_labels({0, 1, 2, 3}).substr(0, 6), true, 6, "truncated header"},
    {"img_pixels_cut", img_trunc, "", false, 29,
     "truncated pixel data: expected 32 bytes, file has 29"},
    {"lab_data_cut", "", idx_labels({0, 1, 2, 3}).substr(0, 10), true, 10, "truncated label data"},
    {"img_trailing", idx_images(4, 2, 2) + "xx", "", false, 32, "2 trailing bytes"},
    {"count_mismatch", "", idx_labels({0, 1, 2}), false, 4, "image count 4 != label count 3"},
    {"zero_count", idx_images(0, 2, 2), idx_labels({}), false, 4, "count is 0"},
    {"zero_size", idx_images(4, 0, 2), "", false, 8, "zero image size"},
    // rows x cols x count once wrapped to 0: a 16-byte file passed as 4 images.
    {"huge_size", be32(2051) + be32(4) + be32(1u << 31) + be32(1u << 31), "", false, 8,
     "image size 2147483648 x 2147483648 = 4611686018427387904 pixels; the limit is 10000000"},
    // The header's size against the file's real one.
    {"count_beyond_file", be32(2051) + be32(100000) + be32(28) + be32(28) + std::string(784, 'x'),
     "", false, 800, "truncated pixel data: expected 78400016 bytes, file has 800"},
  };
  for (const bad_case& c : cases) {
    const std::string ip =
      c.images.empty() ? good_img : tmp.write(std::string(c.name) + "_img", c.images);
    const std::string lp =
      c.labels.empty() ? good_lab : tmp.write(std::string(c.name) + "_lab", c.labels);
    const std::string msg = error_of([&] { (void)load_idx(ip, lp); });
    const std::string prefix =
      (c.blame_labels ? lp : ip) + ": offset " + std::to_string(c.offset) + ": ";
    BOOST_TEST(msg.rfind(prefix, 0) == 0u,
               c.name << ": '" << msg << "' should start with '" << prefix << "'");
    BOOST_TEST(contains(msg, c.reason),
               c.name << ": '" << msg << "' should mention '" << c.reason << "'");
  }
}

BOOST_AUTO_TEST_CASE(mnist_in_repository) {
  // The real MNIST test set shipped in data/mnist: required, config/mnist_mlp.textproto trains on
  // it.
  const std::string dir = source_dir + "/data/mnist/";
  BOOST_REQUIRE_MESSAGE(fs::exists(dir + "t10k-images-idx3-ubyte.gz"),
                        dir << "t10k-images-idx3-ubyte.gz: not found");
  BOOST_TEST(sha256_hex(read_maybe_gzip(dir + "t10k-labels-idx1-ubyte.gz")) ==
             "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2");
  const dataset d = load_idx(dir + "t10k-images-idx3-ubyte.gz", dir + "t10k-labels-idx1-ubyte.gz");
  BOOST_TEST(d.size() == 10000u);
  BOOST_TEST(d.dim == 784u);
  BOOST_TEST(d.classes == 10u);
  const std::array<std::size_t, 10> counts = {980, 1135, 1032, 1010, 982,
                                              892, 958,  1028, 974,  1009};
  for (std::int32_t c = 0; c < 10; ++c)
    BOOST_TEST(count_label(d, c) == counts[static_cast<std::size_t>(c)]);
  const double mean = std::accumulate(d.features.begin(), d.features.end(), 0.0) /
                      static_cast<double>(d.features.size());
  BOOST_TEST(mean * 255 == 33.791, boost::test_tools::tolerance(1e-4));
}

BOOST_AUTO_TEST_CASE(fashion_mnist_in_repository) {
  // Fashion-MNIST's test set in data/fashion-mnist (config/fashion_mlp.textproto): 1,000 per class.
  const std::string dir = source_dir + "/data/fashion-mnist/";
  BOOST_REQUIRE_MESSAGE(fs::exists(dir + "t10k-images-idx3-ubyte.gz"),
                        dir << "t10k-images-idx3-ubyte.gz: not found");
  BOOST_TEST(sha256_hex(read_maybe_gzip(dir + "t10k-images-idx3-ubyte.gz")) ==
             "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b");
  // Streamed: the same digest, the same bytes in the same order, in bounded pieces.
  BOOST_TEST(sha256_of_contents(dir + "t10k-images-idx3-ubyte.gz") ==
             "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b");
  std::string pieces;
  std::size_t largest = 0;
  const auto size =
    for_each_chunk(dir + "t10k-images-idx3-ubyte.gz", [&](const char* p, std::size_t n) {
      pieces.append(p, n);
      largest = std::max(largest, n);
    });
  BOOST_TEST(size == pieces.size());
  BOOST_TEST(pieces == read_maybe_gzip(dir + "t10k-images-idx3-ubyte.gz"));
  BOOST_TEST(largest <= std::size_t{1} << 16);
  const dataset d = load_idx(dir + "t10k-images-idx3-ubyte.gz", dir + "t10k-labels-idx1-ubyte.gz");
  BOOST_TEST(d.size() == 10000u);
  BOOST_TEST(d.dim == 784u);
  BOOST_TEST(d.classes == 10u);
  for (std::int32_t c = 0; c < 10; ++c)
    BOOST_TEST(count_label(d, c) == 1000u);
}

BOOST_AUTO_TEST_CASE(cifar10_synthetic) {
  temp_dir tmp;
  const std::string a = cifar_records({6, 9, 0});
  const std::string b = cifar_records({1, 2});
  const std::string pa = tmp.write("data_batch_1.bin", a);
  const std::string pb = tmp.write("data_batch_2.bin", b);
  const dataset d = load_cifar10({pa, pb});
  BOOST_TEST(d.size() == 5u);
  BOOST_TEST(d.dim == 3072u);
  BOOST_TEST(d.classes == 10u);
  BOOST_TEST(d.labels == (std::vector<std::int32_t>{6, 9, 0, 1, 2}),
             boost::test_tools::per_element());
  BOOST_TEST(d.row(1)[0] == static_cast<float>(static_cast<unsigned char>(a[3073 + 1])) / 255.0f);
  BOOST_TEST(d.row(4)[3071] ==
             static_cast<float>(static_cast<unsigned char>(b[2 * 3073 - 1])) / 255.0f);
  for (std::size_t r = 0; r < 3; ++r) {
    for (std::size_t i = 0; i < 3072; ++i) {
      if (d.row(r)[i] !=
          static_cast<float>(static_cast<unsigned char>(a[r * 3073 + 1 + i])) / 255.0f) {
        BOOST_FAIL("pixel mismatch at record " << r << " byte " << i);
      }
    }
  }
  const dataset head = load_cifar10({pa, pb}, 4);
  BOOST_TEST(head.size() == 4u);
  BOOST_TEST(head.labels.back() == 1);
  BOOST_TEST(equal(load_cifar10({tmp.write("gz.bin", gzip_stored(a + b))}), d));
}

BOOST_AUTO_TEST_CASE(malformed_cifar10_is_refused) {
  temp_dir tmp;
  const std::string good = tmp.write("good.bin", cifar_records({1}));
  struct bad_case {
    const char* name;
    std::string bytes;
    std::uint64_t offset;
    const char* reason;
  };
  const std::vector<bad_case> cases = {
    {"partial", cifar_records({1, 2, 3}).substr(0, 3 * 3073 - 5), 2 * 3073,
     "file size 9214 is not a multiple of the 3073-byte record size"},
    {"extra", cifar_records({1}) + "x", 3073, "partial record of 1 bytes"},
    {"short", std::string(100, '\x01'), 0, "not a multiple"},
    {"label10", cifar_records({1, 10, 2}), 3073, "label 10 > 9 in record 1"},
    {"label255", cifar_records({255}), 0, "label 255 > 9"},
    {"empty", "", 0, "empty file"},
  };
  for (const bad_case& c : cases) {
    const std::string p = tmp.write(std::string(c.name) + ".bin", c.bytes);
    // The bad file second: the first one loads fine.
    const std::string msg = error_of([&] { (void)load_cifar10({good, p}); });
    const std::string prefix = p + ": offset " + std::to_string(c.offset) + ": ";
    BOOST_TEST(msg.rfind(prefix, 0) == 0u,
               c.name << ": '" << msg << "' should start with '" << prefix << "'");
    BOOST_TEST(contains(msg, c.reason),
               c.name << ": '" << msg << "' should mention '" << c.reason << "'");
  }
  BOOST_TEST(!error_of([] { (void)load_cifar10({}); }).empty());
}

BOOST_AUTO_TEST_SUITE_END()
