// One HTTP(S) GET through libcurl, whole or a byte range, for remote training shards. S3
// (s3://bucket/key) is reached over HTTPS with requests signed by libcurl's AWS SigV4 when
// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are in the environment (AWS_SESSION_TOKEN,
// AWS_REGION or AWS_DEFAULT_REGION, AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL for S3-compatible
// stores, path-style, honoured). Retrying is the caller's (it checks what it got).
// Built without libcurl, every call fails with kUnsupported saying so.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ember::io {

struct HttpOptions {
  double connect_timeout_s = 10;
  // a transfer slower than low_speed_bytes per second for low_speed_s seconds is abandoned
  int64_t low_speed_bytes = 1024;
  double low_speed_s = 10;
  double timeout_s = 300;  // the whole transfer
  // > 0: a response body longer than this is cut off and fails (a server sending without end,
  // or a whole file for a range); 0: unbounded
  uint64_t max_bytes = 0;
  // when set and true, a transfer under way is abandoned within about a second (shutdown)
  const std::atomic<bool>* cancel = nullptr;
};

struct HttpResult {
  long status = 0;             // HTTP status (0: no response)
  std::vector<uint8_t> body;
  std::string error;           // libcurl's message when the transfer failed; empty otherwise
  bool ok() const { return error.empty() && (status == 200 || status == 206); }
  // A failure worth retrying: no response, a broken transfer, 408, 429 or 5xx.
  bool transient() const { return !error.empty() || status == 0 || status == 408 || status == 429 || status >= 500; }
  // "HTTP 503" or libcurl's message, for errors.
  std::string describe() const;
};

bool http_support_available();
// GETs url (http://, https://, s3://); with `range`, the bytes [first, first + count), and a
// body longer than count fails whatever options.max_bytes says. Never
// throws for the server's or the network's failures (they are in the result); throws
// kInvalidArgument for a URL scheme it does not read, kUnsupported without libcurl.
HttpResult http_get(const std::string& url, std::optional<std::pair<uint64_t, uint64_t>> range, const HttpOptions& options = {});
// Whether a root names a remote location (http://, https://, s3://).
bool is_remote_url(const std::string& root);

}  // namespace ember::io
