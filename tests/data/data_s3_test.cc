// s3:// shards signed with AWS SigV4 (libcurl's CURLOPT_AWS_SIGV4), against a real nginx on
// loopback standing in for an S3-compatible store (AWS_ENDPOINT_URL, path-style). nginx checks
// what it can without the secret (an Authorization of the AWS4-HMAC-SHA256 form whose credential
// scope names the key, the x-amz-date's day, the region and s3; x-amz-date, x-amz-content-sha256
// and the session token present; 403 otherwise) and logs every request's headers; the test then
// recomputes each logged request's signature with OpenSSL's HMAC-SHA256 (a SigV4 reference of its
// own, checked first against AWS's published examples) and compares. Without nginx, libcurl or
// OpenSSL's libcrypto the tests skip, saying so.
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "ember/core/error.h"
#include "ember/io/http.h"
#include "remote_fixture.h"

#ifdef EMBER_TEST_OPENSSL
#include <openssl/hmac.h>
#include <openssl/sha.h>
#endif

namespace ember::data {
namespace {

namespace fs = std::filesystem;
using test::NginxServer;
using test::Served;

#ifdef EMBER_TEST_OPENSSL
#define REQUIRE_OPENSSL()
#else
#define REQUIRE_OPENSSL() GTEST_SKIP() << "skipped: built without OpenSSL's libcrypto (libssl-dev): no SigV4 reference"
#endif

#ifdef EMBER_TEST_OPENSSL
std::string hex(const unsigned char* p, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) s += digits[p[i] >> 4], s += digits[p[i] & 15];
  return s;
}

std::string sha256_hex(const std::string& text) {
  unsigned char d[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), d);
  return hex(d, sizeof d);
}

std::string hmac(const std::string& key, const std::string& text) {
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(EVP_sha256(), key.data(), int(key.size()), reinterpret_cast<const unsigned char*>(text.data()), text.size(), d, &n);
  return std::string(reinterpret_cast<char*>(d), n);
}

// A request as SigV4 sees it: the signed headers by lower-case name, the payload's hash.
struct SignedRequest {
  std::string method = "GET", path = "/", query;
  std::map<std::string, std::string> headers;  // exactly the signed ones
  std::string payload_sha256 = sha256_hex("");
};

// AWS Signature Version 4 (docs.aws.amazon.com, "Create a signed AWS API request"): the
// canonical request, the string to sign over its hash and the credential scope, the signing key
// derived from the secret by HMAC over day, region, service and "aws4_request".
std::string sigv4(const SignedRequest& r, const std::string& secret, const std::string& region, const std::string& service) {
  const std::string amz_date = r.headers.at("x-amz-date"), day = amz_date.substr(0, 8);
  std::string canonical = r.method + "\n" + r.path + "\n" + r.query + "\n", names;
  for (const auto& [name, value] : r.headers) {
    canonical += name + ":" + value + "\n";
    names += (names.empty() ? "" : ";") + name;
  }
  canonical += "\n" + names + "\n" + r.payload_sha256;
  const std::string scope = day + "/" + region + "/" + service + "/aws4_request";
  const std::string to_sign = "AWS4-HMAC-SHA256\n" + amz_date + "\n" + scope + "\n" + sha256_hex(canonical);
  std::string key = hmac("AWS4" + secret, day);
  for (const std::string& part : {region, service, std::string("aws4_request")}) key = hmac(key, part);
  const std::string sig = hmac(key, to_sign);
  return hex(reinterpret_cast<const unsigned char*>(sig.data()), sig.size());
}
#endif

TEST(SigV4Reference, MatchesAwsPublishedExamples) {
  REQUIRE_OPENSSL();
#ifdef EMBER_TEST_OPENSSL
  // AWS's SigV4 test suite, "get-vanilla"
  SignedRequest vanilla;
  vanilla.headers = {{"host", "example.amazonaws.com"}, {"x-amz-date", "20150830T123600Z"}};
  EXPECT_EQ(sigv4(vanilla, "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "us-east-1", "service"),
            "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
  // Amazon S3's documented example: GET Object with a range
  SignedRequest get;
  get.path = "/test.txt";
  get.headers = {{"host", "examplebucket.s3.amazonaws.com"}, {"range", "bytes=0-9"},
                 {"x-amz-content-sha256", sha256_hex("")}, {"x-amz-date", "20130524T000000Z"}};
  EXPECT_EQ(sigv4(get, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "us-east-1", "s3"),
            "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
#endif
}

// Sets environment variables for a scope, restoring what was there.
class ScopedEnv {
 public:
  void set(const std::string& name, const char* value) {
    if (!saved_.count(name)) {
      const char* old = std::getenv(name.c_str());
      saved_[name] = old ? std::optional<std::string>(old) : std::nullopt;
    }
    value ? ::setenv(name.c_str(), value, 1) : ::unsetenv(name.c_str());
  }
  ~ScopedEnv() {
    for (const auto& [name, old] : saved_) old ? ::setenv(name.c_str(), old->c_str(), 1) : ::unsetenv(name.c_str());
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

constexpr const char* kKey = "AKIDEMBERTEST0000001";
constexpr const char* kSecret = "ember/test+Secret0KEY/not-a-real-one00000";
constexpr const char* kToken = "FwoGZXIvYXdzEMBERsessionTOKEN//test==";
constexpr const char* kRegion = "eu-west-3";
constexpr const char* kBucket = "ember-bucket";
constexpr const char* kSigned = "host;x-amz-content-sha256;x-amz-date;x-amz-security-token";

// nginx as the store: /ember-bucket/ answers only requests that carry SigV4's headers for this
// key, region and day (403 otherwise), and every request's headers go to logs/s3.log.
NginxServer::Options s3_store(const std::string& root, const std::string& log) {
  NginxServer::Options o;
  o.root = root;
  o.http_extra = "  log_format sigv4 '$request_method\\t$request_uri\\t$http_host\\t$http_range\\t$http_x_amz_date\\t"
                 "$http_x_amz_content_sha256\\t$http_x_amz_security_token\\t$http_authorization\\t$status';";
  o.server_extra = "    access_log " + log + " sigv4;\n    location /" + std::string(kBucket) +
                   "/ {\n"
                   "      set $signed \"$http_x_amz_date $http_authorization\";\n"
                   "      if ($signed !~ \"^([0-9]{8})T[0-9]{6}Z AWS4-HMAC-SHA256 Credential=" + kKey + "/\\1/" + kRegion +
                   "/s3/aws4_request, SignedHeaders=" + kSigned + ", Signature=[0-9a-f]{64}$\") { return 403; }\n"
                   "      if ($http_x_amz_content_sha256 != \"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\") { return 403; }\n"
                   "      if ($http_x_amz_security_token != \"" + kToken + "\") { return 403; }\n"
                   "    }";
  return o;
}

// The shards at s3://ember-bucket/run1/shards: ROOT/ember-bucket/run1/shards -> the packed shards.
std::string publish(const Served& s) {
  const std::string root = s.dir.path() + "/store";
  fs::create_directories(root + "/" + kBucket + "/run1");
  fs::create_directory_symlink(s.shards, root + "/" + kBucket + "/run1/shards");
  return root;
}

void set_credentials(ScopedEnv& env, const NginxServer& server, const char* region = kRegion) {
  env.set("AWS_ACCESS_KEY_ID", kKey);
  env.set("AWS_SECRET_ACCESS_KEY", kSecret);
  env.set("AWS_SESSION_TOKEN", kToken);
  env.set("AWS_REGION", region);
  env.set("AWS_DEFAULT_REGION", nullptr);
  env.set("AWS_ENDPOINT_URL_S3", nullptr);
  env.set("AWS_ENDPOINT_URL", (server.url() + "/").c_str());  // a trailing slash, as users write it
}

std::vector<std::vector<std::string>> log_lines(const std::string& log) {
  std::vector<std::vector<std::string>> lines;
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::stringstream ss(line);
    for (std::string f; std::getline(ss, f, '\t');) fields.push_back(f);
    if (fields.size() == 9 && fields[1].rfind(std::string("/") + kBucket + "/", 0) == 0) lines.push_back(fields);
  }
  return lines;
}

TEST(S3Shards, SignedRequestsAreAcceptedAndTheirSignaturesRecomputed) {
  REQUIRE_NGINX();
  REQUIRE_OPENSSL();
#ifdef EMBER_TEST_OPENSSL
  Served s;
  const std::string log = s.dir.path() + "/nginx/logs/s3.log";
  NginxServer server(s.dir.path() + "/nginx", s3_store(publish(s), log));
  ASSERT_FALSE(server.url().empty()) << "nginx did not start (see " << s.dir.path() << "/nginx/logs)";
  ScopedEnv env;
  set_credentials(env, server);
  const std::time_t started = std::time(nullptr);
  {
    data::RemoteShards remote(std::string("s3://") + kBucket + "/run1/shards", test::quick(s.dir.path() + "/cache"));
    test::expect_same_samples(remote, s.shards);
    EXPECT_EQ(remote.stats().shards_fetched, int64_t(s.index.shards.size()));
    EXPECT_EQ(remote.stats().retries, 0);
  }
  const auto lines = log_lines(log);
  ASSERT_GT(lines.size(), s.index.shards.size()) << "the index, the metadata and every shard's pieces";
  int ranged = 0;
  for (const auto& f : lines) {
    // method, uri, host, range, x-amz-date, x-amz-content-sha256, token, authorization, status
    ranged += f[3] != "-";
    EXPECT_EQ(f[8], f[3] != "-" ? "206" : "200") << f[1] << " " << f[3];
    SignedRequest r;
    r.path = f[1];
    r.headers = {{"host", f[2]}, {"x-amz-content-sha256", f[5]}, {"x-amz-date", f[4]}, {"x-amz-security-token", f[6]}};
    const std::string auth = f[7], mark = "Signature=";
    ASSERT_NE(auth.find(std::string("SignedHeaders=") + kSigned + ","), std::string::npos) << auth;
    const std::string sent = auth.substr(auth.find(mark) + mark.size());
    EXPECT_EQ(sent, sigv4(r, kSecret, kRegion, "s3")) << "the signature libcurl sent for " << f[1] << " (" << f[4] << ")";
    EXPECT_NE(sent, sigv4(r, "another secret", kRegion, "s3"));  // the reference tells secrets apart
    // the date is now (UTC), within a minute
    std::tm tm{};
    ASSERT_TRUE(strptime(f[4].c_str(), "%Y%m%dT%H%M%SZ", &tm)) << f[4];
    EXPECT_LE(std::abs(double(timegm(&tm) - started)), 60.0) << f[4];
  }
  EXPECT_GT(ranged, 0) << "the shards are fetched in ranges";
  std::printf("%zu signed requests logged by nginx (%d ranged), every signature recomputed\n", lines.size(), ranged);
#endif
}

// What nginx refuses (403), and the error names the URL and the status: the store checks the
// signing is on, and a request without it is not a silent success.
TEST(S3Shards, UnsignedOrWronglyScopedRequestsAreRefused) {
  REQUIRE_NGINX();
  Served s;
  const std::string log = s.dir.path() + "/nginx/logs/s3.log";
  NginxServer server(s.dir.path() + "/nginx", s3_store(publish(s), log));
  ASSERT_FALSE(server.url().empty());
  const std::string url = std::string("s3://") + kBucket + "/run1/shards";
  auto refused = [&](const std::string& why) {
    std::string msg = test::error_of([&] { data::RemoteShards(url, test::quick(s.dir.path() + "/cache-" + why)); }, ErrorKind::kIO);
    EXPECT_NE(msg.find("HTTP 403"), std::string::npos) << why << ": " << msg;
    EXPECT_NE(msg.find(url + "/meta/shards.json"), std::string::npos) << why << ": " << msg;
  };
  {
    ScopedEnv env;
    set_credentials(env, server);
    env.set("AWS_ACCESS_KEY_ID", nullptr);  // no credentials: unsigned
    refused("unsigned");
  }
  {
    ScopedEnv env;
    set_credentials(env, server, "us-east-1");  // signed for another region
    refused("region");
  }
  {
    ScopedEnv env;
    set_credentials(env, server);
    env.set("AWS_SESSION_TOKEN", nullptr);  // the token missing
    refused("token");
  }
  EXPECT_EQ(log_lines(log).size(), 3u) << "no retries of a 403";
}

TEST(S3Shards, UrlWithoutBucketIsAnInvalidArgument) {
  if (!io::http_support_available()) GTEST_SKIP() << "skipped: ember built without libcurl (libcurl4-openssl-dev)";
  std::string msg = test::error_of([] { io::http_get("s3:///key", std::nullopt); }, ErrorKind::kInvalidArgument);
  EXPECT_NE(msg.find("names a bucket"), std::string::npos) << msg;
}

}  // namespace
}  // namespace ember::data
