#include "ember/core/error.h"
#include "ember/io/http.h"

namespace ember::io {

std::string HttpResult::describe() const { return error.empty() ? "HTTP " + std::to_string(status) : error; }

bool http_support_available() { return false; }

bool is_remote_url(const std::string& root) {
  return root.rfind("http://", 0) == 0 || root.rfind("https://", 0) == 0 || root.rfind("s3://", 0) == 0;
}

HttpResult http_get(const std::string& url, std::optional<std::pair<uint64_t, uint64_t>>, const HttpOptions&) {
  fail(ErrorKind::kUnsupported, url + ": ember was built without libcurl (apt-get install libcurl4-openssl-dev), "
                                      "so remote shards cannot be read; copy them to a local directory");
}

}  // namespace ember::io
