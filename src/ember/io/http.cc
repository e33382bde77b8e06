#include "ember/io/http.h"

#include <curl/curl.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "ember/core/error.h"

namespace ember::io {

namespace {

struct Sink {
  std::vector<uint8_t>* body;
  uint64_t max_bytes;  // 0: unbounded
  bool overflow = false;
};

size_t on_data(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<Sink*>(user);
  const size_t got = size * n;
  if (sink->max_bytes && sink->body->size() + got > sink->max_bytes) {
    sink->overflow = true;
    return 0;  // libcurl ends the transfer with CURLE_WRITE_ERROR
  }
  sink->body->insert(sink->body->end(), reinterpret_cast<uint8_t*>(data), reinterpret_cast<uint8_t*>(data) + got);
  return got;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto* cancel = static_cast<const std::atomic<bool>*>(user);
  return cancel && cancel->load() ? 1 : 0;  // non-zero: libcurl aborts (CURLE_ABORTED_BY_CALLBACK)
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// the region S3 requests are signed for and AWS's endpoint is named by
std::string s3_region() {
  if (!env("AWS_REGION").empty()) return env("AWS_REGION");
  if (!env("AWS_DEFAULT_REGION").empty()) return env("AWS_DEFAULT_REGION");
  return "us-east-1";
}

// s3://bucket/key -> the URL to GET: path-style under the endpoint override (AWS_ENDPOINT_URL_S3,
// else AWS_ENDPOINT_URL: S3-compatible stores), else AWS's virtual-hosted bucket over HTTPS.
std::string s3_url(const std::string& url, const std::string& region) {
  const std::string rest = url.substr(5);
  const size_t slash = rest.find('/');
  const std::string bucket = rest.substr(0, slash), key = slash == std::string::npos ? "" : rest.substr(slash + 1);
  if (bucket.empty()) fail(ErrorKind::kInvalidArgument, url + ": an s3:// URL names a bucket (s3://BUCKET/KEY)");
  std::string endpoint = env("AWS_ENDPOINT_URL_S3").empty() ? env("AWS_ENDPOINT_URL") : env("AWS_ENDPOINT_URL_S3");
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  if (!endpoint.empty()) return endpoint + "/" + bucket + "/" + key;
  return "https://" + bucket + ".s3." + region + ".amazonaws.com/" + key;
}

// SHA-256 of an empty payload: every request here is a GET without a body. S3 wants the
// payload's hash in x-amz-content-sha256 and libcurl 7.88 does not send it; libcurl signs every
// x-amz-* header it is given, and its canonical request hashes the same empty payload.
constexpr const char* kEmptySha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

}  // namespace

std::string HttpResult::describe() const {
  if (!error.empty()) return error;
  return "HTTP " + std::to_string(status);
}

bool http_support_available() { return true; }

bool is_remote_url(const std::string& root) {
  return root.rfind("http://", 0) == 0 || root.rfind("https://", 0) == 0 || root.rfind("s3://", 0) == 0;
}

HttpResult http_get(const std::string& url_in, std::optional<std::pair<uint64_t, uint64_t>> range, const HttpOptions& o) {
  if (!is_remote_url(url_in)) fail(ErrorKind::kInvalidArgument, url_in + ": not an http://, https:// or s3:// URL");
  static std::once_flag init;
  std::call_once(init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  const bool s3 = url_in.rfind("s3://", 0) == 0;
  const std::string region = s3 ? s3_region() : "";
  const std::string url = s3 ? s3_url(url_in, region) : url_in;  // a bad s3:// URL throws before any transfer
  HttpResult r;
  CURL* curl = curl_easy_init();
  if (!curl) {
    r.error = "libcurl could not start a transfer";
    return r;
  }
  struct curl_slist* headers = nullptr;
  std::string user, password, sigv4;
  if (s3 && !env("AWS_ACCESS_KEY_ID").empty() && !env("AWS_SECRET_ACCESS_KEY").empty()) {
    // libcurl takes the key id and the secret as user and password (CURLOPT_USERNAME and
    // CURLOPT_PASSWORD: a ':' in either is kept)
    user = env("AWS_ACCESS_KEY_ID");
    password = env("AWS_SECRET_ACCESS_KEY");
    sigv4 = "aws:amz:" + region + ":s3";
    curl_easy_setopt(curl, CURLOPT_USERNAME, user.c_str());
    curl_easy_setopt(curl, CURLOPT_PASSWORD, password.c_str());
    curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, sigv4.c_str());
    headers = curl_slist_append(headers, (std::string("x-amz-content-sha256: ") + kEmptySha256).c_str());
    if (!env("AWS_SESSION_TOKEN").empty()) headers = curl_slist_append(headers, ("x-amz-security-token: " + env("AWS_SESSION_TOKEN")).c_str());
  }
  std::string range_text;
  Sink sink{&r.body, o.max_bytes};
  if (range && (!sink.max_bytes || range->second < sink.max_bytes)) sink.max_bytes = range->second;
  if (sink.max_bytes) {
    r.body.reserve(size_t(std::min<uint64_t>(sink.max_bytes, uint64_t(64) << 20)));
    curl_easy_setopt(curl, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(sink.max_bytes));  // an announced length above it
  }
  if (range) {
    range_text = std::to_string(range->first) + "-" + std::to_string(range->first + range->second - 1);
    curl_easy_setopt(curl, CURLOPT_RANGE, range_text.c_str());
  }
  char message[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
  if (o.cancel) {
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, const_cast<std::atomic<bool>*>(o.cancel));
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  }
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, message);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, long(o.connect_timeout_s * 1000));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, long(o.timeout_s * 1000));
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, long(o.low_speed_bytes));
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, long(o.low_speed_s));
  if (headers) curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  CURLcode code = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &r.status);
  if (sink.overflow || code == CURLE_FILESIZE_EXCEEDED)
    r.error = "the response is longer than the " + std::to_string(sink.max_bytes) + " bytes expected";
  else if (code == CURLE_ABORTED_BY_CALLBACK)
    r.error = "abandoned (shutting down)";
  else if (code != CURLE_OK)
    r.error = std::string(curl_easy_strerror(code)) + (message[0] ? std::string(": ") + message : "");
  if (!r.error.empty()) r.body.clear();
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  return r;
}

}  // namespace ember::io
