#include "ember/data/path_template.h"

#include <algorithm>
#include <cstdio>

#include "ember/core/error.h"

namespace ember::data {

std::string format_path(const std::string& tmpl, const TemplateArgs& args, const std::string& what) {
  std::string out;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    char c = tmpl[i];
    if (c == '{' && i + 1 < tmpl.size() && tmpl[i + 1] == '{') { out += '{'; ++i; continue; }
    if (c == '}' && i + 1 < tmpl.size() && tmpl[i + 1] == '}') { out += '}'; ++i; continue; }
    if (c != '{') { out += c; continue; }
    size_t end = tmpl.find('}', i);
    if (end == std::string::npos) fail_corrupt(what + ": path template '" + tmpl + "' has an unclosed '{'");
    std::string field = tmpl.substr(i + 1, end - i - 1), spec;
    if (size_t colon = field.find(':'); colon != std::string::npos) {
      spec = field.substr(colon + 1);
      field = field.substr(0, colon);
    }
    if (auto it = args.strings.find(field); it != args.strings.end()) {
      if (!spec.empty()) fail_corrupt(what + ": path template field {" + field + ":" + spec + "}: unsupported format");
      out += it->second;
    } else if (auto jt = args.ints.find(field); jt != args.ints.end()) {
      int width = 0;
      bool zero = false;
      if (!spec.empty()) {
        // only [0][width]d, the forms LeRobot uses
        size_t k = 0;
        if (spec[k] == '0') { zero = true; ++k; }
        // (saturated: a width of 2^31 must not wrap to a negative one that passes the check)
        while (k < spec.size() && spec[k] >= '0' && spec[k] <= '9') width = std::min(width * 10 + (spec[k++] - '0'), 1000);
        if (k + 1 != spec.size() || spec[k] != 'd' || width > 32)
          fail_corrupt(what + ": path template field {" + field + ":" + spec + "}: unsupported format (expected e.g. :03d)");
      }
      char buf[64];
      std::snprintf(buf, sizeof buf, zero ? "%0*lld" : "%*lld", width, static_cast<long long>(jt->second));
      out += buf;
    } else {
      fail_corrupt(what + ": path template '" + tmpl + "' uses {" + field + "}, which ember does not know");
    }
    i = end;
  }
  return out;
}

}  // namespace ember::data
