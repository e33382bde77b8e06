#include "ember/data/stats.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "ember/core/error.h"
#include "ember/core/file.h"

namespace ember::data {

namespace {

// numpy.linspace(lo, hi, bins + 1): lo + i * step, the last edge exactly hi.
std::vector<double> bin_edges(double lo, double hi, int bins) {
  std::vector<double> e(size_t(bins) + 1);
  double step = (hi - lo) / bins;
  for (int i = 0; i < bins; ++i) e[size_t(i)] = double(i) * step + lo;
  e[size_t(bins)] = hi;
  return e;
}

// numpy.histogram's bin for x: edges[b] <= x < edges[b+1], the last bin closed on the right.
int bin_of(const std::vector<double>& edges, double x) {
  auto it = std::upper_bound(edges.begin(), edges.end(), x);
  int b = int(it - edges.begin()) - 1;
  return std::clamp(b, 0, int(edges.size()) - 2);
}

// LeRobot's RunningQuantileStats._compute_single_quantile: the first bin whose cumulative
// count reaches target, interpolated linearly inside it.
double histogram_quantile(const std::vector<double>& cumsum, const std::vector<double>& edges, double target) {
  size_t idx = size_t(std::lower_bound(cumsum.begin(), cumsum.end(), target) - cumsum.begin());
  if (idx == 0) return edges.front();
  if (idx >= cumsum.size()) return edges.back();
  double before = cumsum[idx - 1];
  double in_bin = cumsum[idx] - before;
  if (in_bin == 0) return edges[idx];
  return edges[idx] + (target - before) / in_bin * (edges[idx + 1] - edges[idx]);
}

// Fills stats q01..q99 of one dimension from its histogram (hist[b] counts for bin b).
void add_quantiles(FeatureStats& s, size_t dim, const std::vector<double>& hist, const std::vector<double>& edges,
                   double rows) {
  std::vector<double> cumsum(hist.size());
  double run = 0;
  for (size_t b = 0; b < hist.size(); ++b) cumsum[b] = run += hist[b];
  for (size_t q = 0; q < kQuantileProbs.size(); ++q)
    s[kQuantileNames[q]][dim] = histogram_quantile(cumsum, edges, kQuantileProbs[q] * rows);
}

void size_all(FeatureStats& s, size_t dims) {
  for (const char* k : {"min", "max", "mean", "std"}) s[k].assign(dims, 0.0);
  for (const char* q : kQuantileNames) s[q].assign(dims, 0.0);
}

}  // namespace

FeatureStats compute_stats(std::span<const double> values, int64_t dims, int64_t count, const StatsOptions& options) {
  if (dims <= 0 || values.size() % size_t(dims) != 0)
    fail(ErrorKind::kInvalidArgument, "compute_stats: " + std::to_string(values.size()) +
                                          " values do not form rows of " + std::to_string(dims));
  const size_t d = size_t(dims), rows = values.size() / d;
  if (rows == 0) fail(ErrorKind::kInvalidArgument, "compute_stats: no rows");
  if (options.num_bins < 1) fail(ErrorKind::kInvalidArgument, "compute_stats: num_bins must be positive");
  FeatureStats s;
  size_all(s, d);
  s["count"] = {double(count < 0 ? int64_t(rows) : count)};
  for (size_t j = 0; j < d; ++j) {
    double lo = values[j], hi = values[j], sum = 0;
    for (size_t r = 0; r < rows; ++r) {
      double x = values[r * d + j];
      lo = std::min(lo, x);
      hi = std::max(hi, x);
      sum += x;
    }
    double mean = sum / double(rows), sq = 0;
    for (size_t r = 0; r < rows; ++r) sq += (values[r * d + j] - mean) * (values[r * d + j] - mean);
    s["min"][j] = lo;
    s["max"][j] = hi;
    s["mean"][j] = mean;
    s["std"][j] = std::sqrt(sq / double(rows));
    if (rows < 2) {  // LeRobot's _compute_basic_stats: quantiles are the mean
      for (const char* q : kQuantileNames) s[q][j] = mean;
      continue;
    }
    std::vector<double> edges = bin_edges(lo - 1e-10, hi + 1e-10, options.num_bins);
    std::vector<double> hist(size_t(options.num_bins), 0.0);
    for (size_t r = 0; r < rows; ++r) hist[size_t(bin_of(edges, values[r * d + j]))] += 1;
    add_quantiles(s, j, hist, edges, double(rows));
  }
  return s;
}

std::vector<int64_t> sample_frame_indices(int64_t n) {
  if (n <= 0) return {};
  // estimate_num_samples(n): min 100 (or n), n^0.75, at most 10000
  int64_t min_samples = std::min<int64_t>(100, n);
  int64_t num = std::max(min_samples, std::min(int64_t(std::pow(double(n), 0.75)), int64_t(10000)));
  // np.round(np.linspace(0, n - 1, num)): round half to even
  std::vector<int64_t> out(static_cast<size_t>(num));
  double step = num > 1 ? double(n - 1) / double(num - 1) : 0.0;
  for (int64_t i = 0; i < num; ++i) out[size_t(i)] = int64_t(std::nearbyint(double(i) * step));
  if (num > 1) out.back() = n - 1;  // linspace ends exactly at its stop
  return out;
}

int image_downsample_stride(int height, int width) {
  if (std::max(width, height) < 300) return 1;
  int f = width > height ? int(width / 150.0) : int(height / 150.0);
  return std::max(f, 1);
}

void PixelHistogram::add(const io::Image& image) {
  if (image.rgb.size() != size_t(image.width) * size_t(image.height) * 3)
    fail(ErrorKind::kInvalidArgument, "PixelHistogram: image of " + std::to_string(image.width) + "x" +
                                          std::to_string(image.height) + " holds " + std::to_string(image.rgb.size()) +
                                          " bytes, expected width * height * 3");
  const int s = image_downsample_stride(image.height, image.width);
  for (int y = 0; y < image.height; y += s) {
    const uint8_t* row = image.rgb.data() + size_t(y) * size_t(image.width) * 3;
    for (int x = 0; x < image.width; x += s)
      for (int c = 0; c < 3; ++c) ++counts[size_t(c)][row[size_t(x) * 3 + size_t(c)]];
  }
  ++images;
}

void PixelHistogram::merge(const PixelHistogram& other) {
  for (size_t c = 0; c < 3; ++c)
    for (size_t l = 0; l < 256; ++l) counts[c][l] += other.counts[c][l];
  images += other.images;
}

int64_t PixelHistogram::pixels() const {
  int64_t n = 0;
  for (int64_t v : counts[0]) n += v;
  return n;
}

FeatureStats image_stats(const PixelHistogram& h, const StatsOptions& options) {
  const int64_t n = h.pixels();
  if (h.images <= 0 || n <= 0) fail(ErrorKind::kInvalidArgument, "image_stats: no image");
  if (options.num_bins < 1) fail(ErrorKind::kInvalidArgument, "image_stats: num_bins must be positive");
  FeatureStats s;
  size_all(s, 3);
  s["count"] = {double(h.images)};
  for (size_t c = 0; c < 3; ++c) {
    const auto& k = h.counts[c];
    int lo = 0, hi = 255;
    while (k[size_t(lo)] == 0) ++lo;
    while (k[size_t(hi)] == 0) --hi;
    // exact sums: the variance has no cancellation error
    __int128 s1 = 0, s2 = 0;
    for (int l = lo; l <= hi; ++l) {
      s1 += __int128(k[size_t(l)]) * l;
      s2 += __int128(k[size_t(l)]) * l * l;
    }
    double mean = double(s1) / double(n);
    double var = double(s2 * n - s1 * s1) / (double(n) * double(n));
    // statistics in pixel levels, then scaled to [0, 1] as LeRobot does (v / 255)
    s["min"][c] = lo / 255.0;
    s["max"][c] = hi / 255.0;
    s["mean"][c] = mean / 255.0;
    s["std"][c] = std::sqrt(std::max(0.0, var)) / 255.0;
    if (n < 2) {
      for (const char* q : kQuantileNames) s[q][c] = mean / 255.0;
      continue;
    }
    std::vector<double> edges = bin_edges(lo - 1e-10, hi + 1e-10, options.num_bins);
    std::vector<double> hist(size_t(options.num_bins), 0.0);
    for (int l = lo; l <= hi; ++l)
      if (k[size_t(l)]) hist[size_t(bin_of(edges, l))] += double(k[size_t(l)]);
    add_quantiles(s, c, hist, edges, double(n));
    for (const char* q : kQuantileNames) s[q][c] /= 255.0;
  }
  return s;
}

FeatureStats compute_image_stats(std::span<const io::Image> images, const StatsOptions& options) {
  PixelHistogram h;
  for (const io::Image& im : images) h.add(im);
  return image_stats(h, options);
}

FeatureStats aggregate_feature_stats(const std::vector<FeatureStats>& parts, const std::string& what) {
  if (parts.empty()) fail(ErrorKind::kInvalidArgument, what + ": nothing to aggregate");
  auto get = [&](const FeatureStats& p, const std::string& k, size_t i) -> const std::vector<double>& {
    auto it = p.find(k);
    if (it == p.end()) fail(ErrorKind::kInvalidArgument, what + ": part " + std::to_string(i) + " has no '" + k + "'");
    return it->second;
  };
  const size_t d = get(parts[0], "mean", 0).size();
  std::vector<double> w(parts.size());
  double total = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    for (const char* k : {"min", "max", "mean", "std"})
      if (get(parts[i], k, i).size() != d)
        fail(ErrorKind::kInvalidArgument, what + ": part " + std::to_string(i) + " has " +
                                              std::to_string(get(parts[i], k, i).size()) + " values of '" + k +
                                              "', part 0 has " + std::to_string(d));
    const std::vector<double>& c = get(parts[i], "count", i);
    if (c.size() != 1) fail(ErrorKind::kInvalidArgument, what + ": part " + std::to_string(i) + ": 'count' must hold one value");
    total += w[i] = c[0];
  }
  if (!(total > 0)) fail(ErrorKind::kInvalidArgument, what + ": the counts add up to " + std::to_string(total));

  FeatureStats out;
  std::vector<double> mn = parts[0].at("min"), mx = parts[0].at("max"), mean(d, 0.0), var(d, 0.0);
  for (size_t i = 0; i < parts.size(); ++i)
    for (size_t j = 0; j < d; ++j) {
      mn[j] = std::min(mn[j], parts[i].at("min")[j]);
      mx[j] = std::max(mx[j], parts[i].at("max")[j]);
      mean[j] += parts[i].at("mean")[j] * w[i];
    }
  for (double& m : mean) m /= total;
  for (size_t i = 0; i < parts.size(); ++i)
    for (size_t j = 0; j < d; ++j) {
      double sd = parts[i].at("std")[j], dm = parts[i].at("mean")[j] - mean[j];
      var[j] += (sd * sd + dm * dm) * w[i];
    }
  for (double& v : var) v = std::sqrt(v / total);
  out["min"] = std::move(mn);
  out["max"] = std::move(mx);
  out["mean"] = std::move(mean);
  out["std"] = std::move(var);
  out["count"] = {total};

  // quantiles: count-weighted means, for the q-keys of the first part that every part has
  for (const auto& entry : parts[0]) {
    const std::string& key = entry.first;  // (not a structured binding: lambdas below use it, which clang 14 refuses)
    const std::vector<double>& first = entry.second;
    if (key.size() < 2 || key[0] != 'q' || !std::all_of(key.begin() + 1, key.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) continue;
    bool everywhere = std::all_of(parts.begin(), parts.end(), [&](const FeatureStats& p) {
      auto it = p.find(key);
      return it != p.end() && it->second.size() == first.size();
    });
    if (!everywhere) continue;
    std::vector<double> q(first.size(), 0.0);
    for (size_t i = 0; i < parts.size(); ++i)
      for (size_t j = 0; j < q.size(); ++j) q[j] += parts[i].at(key)[j] * w[i];
    for (double& v : q) v /= total;
    out[key] = std::move(q);
  }
  return out;
}

std::map<std::string, FeatureStats> aggregate_stats(const std::vector<std::map<std::string, FeatureStats>>& parts) {
  std::set<std::string> keys;
  for (const auto& p : parts)
    for (const auto& [k, v] : p) keys.insert(k);
  std::map<std::string, FeatureStats> out;
  for (const std::string& k : keys) {
    std::vector<FeatureStats> with;
    for (const auto& p : parts)
      if (auto it = p.find(k); it != p.end()) with.push_back(it->second);
    out[k] = aggregate_feature_stats(with, "stats of '" + k + "'");
  }
  return out;
}

std::vector<std::string> stat_names_in_order(const FeatureStats& s) {
  std::vector<std::string> order = {"min", "max", "mean", "std", "count"};
  for (const char* q : kQuantileNames) order.emplace_back(q);
  std::vector<std::string> out;
  for (const std::string& k : order)
    if (s.count(k)) out.push_back(k);
  for (const auto& [k, v] : s)
    if (std::find(order.begin(), order.end(), k) == order.end()) out.push_back(k);
  return out;
}

bool stat_is_integer(const Feature& f, const std::string& stat) {
  if (stat == "count") return true;
  if (stat != "min" && stat != "max") return false;
  const std::string& t = f.dtype;
  return t == "bool" || t.rfind("int", 0) == 0 || t.rfind("uint", 0) == 0;
}

nlohmann::ordered_json stats_to_json(const std::map<std::string, FeatureStats>& stats, const std::vector<Feature>& features) {
  using json = nlohmann::ordered_json;
  std::vector<std::string> order;
  for (const Feature& f : features)
    if (stats.count(f.key)) order.push_back(f.key);
  for (const auto& [k, v] : stats)
    if (std::find(order.begin(), order.end(), k) == order.end()) order.push_back(k);
  json out = json::object();
  for (const std::string& key : order) {
    const FeatureStats& fs = stats.at(key);
    Feature plain;
    const Feature* f = &plain;
    for (const Feature& g : features)
      if (g.key == key) f = &g;
    json j = json::object();
    for (const std::string& name : stat_names_in_order(fs)) {
      const std::vector<double>& v = fs.at(name);
      json list = json::array();
      for (double x : v) {
        if (stat_is_integer(*f, name)) list.push_back(int64_t(std::llround(x)));
        else list.push_back(x);
      }
      if (f->is_camera() && name != "count" && v.size() == 3) {  // shape (3, 1, 1)
        json nested = json::array();
        for (const json& x : list) nested.push_back(json::array({json::array({x})}));
        list = std::move(nested);
      }
      j[name] = std::move(list);
    }
    out[key] = std::move(j);
  }
  return out;
}

void write_stats_json(const std::string& path, const std::map<std::string, FeatureStats>& stats,
                      const std::vector<Feature>& features) {
  std::string text = stats_to_json(stats, features).dump(4) + "\n";
  AtomicFile f(path);
  f.write(text.data(), text.size());
  f.commit();
}

}  // namespace ember::data
