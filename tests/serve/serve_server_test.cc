// ember serve over loopback, driven by a Beast websocket client (serve/client.h): the metadata
// frame, actions equal to ember predict's on the same inputs and noise (every registered policy
// type), several clients at once batched, garbage clients that cost only their own connection,
// /healthz, the API key, the connection limit, and the drain on stop. Ports are picked by the
// system (port 0); every wait is bounded.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <thread>

#include "ember/core/error.h"
#include "ember/serve/client.h"
#include "ember/serve/serve.h"
#include "ember/serve/server.h"
#include "ember/train/inference.h"
#include "ember/train/predict.h"
#include "serve_fixture.h"
#include "test_util.h"

namespace ember::serve {
namespace {

using namespace test_fixture;

// an engine, its key map and a server on a free loopback port
struct Loopback {
  explicit Loopback(const std::string& checkpoint_dir, EngineOptions eo = {}, ServerOptions so = {})
      : engine(train::load_policy(checkpoint_dir, at::kCPU), at::kCPU, eo), map(engine.bundle().spec, engine.bundle().shape) {
    so.host = "127.0.0.1";
    so.port = 0;
    ServeOptions defaults;
    defaults.checkpoint = checkpoint_dir;
    so.metadata = encode(serve_metadata(engine, map, defaults));
    server = std::make_unique<Server>(engine, map, so);
  }
  Client client(const std::string& api_key = "") { return Client("127.0.0.1", server->port(), api_key, 60); }
  Engine engine;
  ObservationMap map;
  std::unique_ptr<Server> server;
};

void expect_has(const std::string& text, const std::string& part) { EXPECT_NE(text.find(part), std::string::npos) << text; }

// the same chunk up to float rounding: a request batched with another (default --max_batch) may
// differ from its chunk alone in the last bits
void expect_near(const std::vector<std::vector<float>>& got, const std::vector<std::vector<float>>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t h = 0; h < want.size(); ++h) {
    ASSERT_EQ(got[h].size(), want[h].size());
    for (size_t d = 0; d < want[h].size(); ++d) EXPECT_NEAR(got[h][d], want[h][d], 1e-4) << "row " << h << ", dim " << d;
  }
}

// the error text frame a bad request gets, after which the server closes (1008)
std::string refusal(Client& c) {
  auto frame = c.receive();
  if (!frame) return "(closed without a message, status " + std::to_string(c.close_code()) + ")";
  EXPECT_FALSE(frame->binary);
  EXPECT_FALSE(c.receive().has_value()) << "the connection should close after the error";
  EXPECT_EQ(c.close_code(), 1008);
  return frame->data;
}

class ServeTypes : public ::testing::TestWithParam<std::string> {};

TEST_P(ServeTypes, ActionsEqualEmberPredictOnTheSameInputsAndNoise) {
  const std::string dir = checkpoint(GetParam());
  Loopback lb(dir);
  auto client = lb.client();
  auto bundle = train::load_policy(dir, at::kCPU);
  // the connection's first request draws its noise from --seed (0), as predict's seed 0
  auto obs = frame_observation(bundle, 3);
  auto reply = client.infer(obs);
  auto predicted = train::predict_chunk(bundle, kFixture, 3, at::kCPU, 0).predicted;
  EXPECT_EQ(actions_of(reply), predicted);
  ASSERT_NE(reply.find("server_timing"), nullptr);
  EXPECT_GT(reply.find("server_timing")->find("infer_ms")->number, 0);
  // given noise, as predict --noise
  auto noise = at::randn({bundle.shape.horizon, bundle.shape.max_action_dim});
  obs.set("noise", noise_field(noise));
  EXPECT_EQ(actions_of(client.infer(obs)), train::predict_chunk(bundle, kFixture, 3, at::kCPU, 0, noise).predicted);
  // the connection's third request (k = 2) without noise: seed 0 + 2
  obs = frame_observation(bundle, 5);
  EXPECT_EQ(actions_of(client.infer(obs)), train::predict_chunk(bundle, kFixture, 5, at::kCPU, 2).predicted);
}

INSTANTIATE_TEST_SUITE_P(Registered, ServeTypes, ::testing::ValuesIn([] {
                           std::vector<std::string> names;
                           for (const auto& t : model::policy_types()) names.push_back(t.name);
                           return names;
                         }()));

TEST(Serve, MetadataFrameOnConnect) {
  Loopback lb(checkpoint());
  auto client = lb.client();
  const Field& m = client.metadata();
  EXPECT_EQ(m.find("server")->bytes, "ember serve");
  EXPECT_EQ(m.find("action_horizon")->integer, 10);
  EXPECT_EQ(m.find("denoising_steps")->integer, lb.engine.bundle().shape.flow_steps);
  EXPECT_EQ(m.find("action_dim")->integer, 7);
  EXPECT_EQ(m.find("state_dim")->integer, 8);
  EXPECT_EQ(m.find("obs_map")->find("observation/image")->bytes, lb.engine.bundle().spec.cameras[0]);
  EXPECT_EQ(m.find("cameras")->items.size(), lb.engine.bundle().spec.cameras.size());
}

TEST(Serve, SeveralClientsAtOnceAreBatchedAndEachGetsItsOwnChunk) {
  // a batch of 4 runs only once all 4 wait (the timeout is far): one batch, deterministically
  Loopback lb(checkpoint(), {.max_batch = 4, .batch_timeout_ms = 60000});
  auto bundle = train::load_policy(checkpoint(), at::kCPU);
  std::vector<std::vector<std::vector<float>>> got(4);
  std::vector<std::string> errors(4);
  std::vector<std::thread> clients;
  for (int i = 0; i < 4; ++i)
    clients.emplace_back([&, i] {
      try {
        auto c = lb.client();
        auto obs = frame_observation(bundle, 2 + i);
        obs.set("noise", noise_field(train::seeded_noise(bundle.shape, 100 + i)));
        got[size_t(i)] = actions_of(c.infer(obs));
      } catch (const std::exception& e) {
        errors[size_t(i)] = e.what();
      }
    });
  for (auto& t : clients) t.join();
  EXPECT_EQ(lb.engine.batches(), 1);
  EXPECT_EQ(lb.engine.requests(), 4);
  double worst = 0;
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(errors[size_t(i)], "");
    auto want = train::predict_chunk(bundle, kFixture, 2 + i, at::kCPU, 0, train::seeded_noise(bundle.shape, 100 + i)).predicted;
    ASSERT_EQ(got[size_t(i)].size(), want.size());
    for (size_t h = 0; h < want.size(); ++h)
      for (size_t d = 0; d < want[h].size(); ++d) {
        EXPECT_NEAR(got[size_t(i)][h][d], want[h][d], 1e-4) << "client " << i;
        worst = std::max(worst, double(std::abs(got[size_t(i)][h][d] - want[h][d])));
      }
  }
  std::printf("batched against one at a time: max |difference| %.3g\n", worst);
}

TEST(Serve, HealthzAnswersOverPlainHttp) {
  Loopback lb(checkpoint());
  auto [status, body] = http_get("127.0.0.1", lb.server->port(), "/healthz");
  EXPECT_EQ(status, 200);
  EXPECT_EQ(body, "OK\n");
  EXPECT_EQ(http_get("127.0.0.1", lb.server->port(), "/elsewhere").first, 404);
}

TEST(Serve, ApiKeyIsRequiredWhenSet) {
  ServerOptions so;
  so.api_key = "s3cret";
  Loopback lb(checkpoint(), {}, so);
  expect_has(test::error_of([&] { lb.client(); }, ErrorKind::kIO), "HTTP 401");
  expect_has(test::error_of([&] { lb.client("wrong"); }, ErrorKind::kIO), "HTTP 401");
  auto c = lb.client("s3cret");
  EXPECT_EQ(c.metadata().find("server")->bytes, "ember serve");
}

TEST(Serve, ConnectionsPastTheLimitAreRefused) {
  ServerOptions so;
  so.max_connections = 1;
  Loopback lb(checkpoint(), {}, so);
  auto first = lb.client();
  expect_has(test::error_of([&] { lb.client(); }, ErrorKind::kIO), "HTTP 503");
}

TEST(Serve, ControlMessagesAreAcknowledged) {
  Loopback lb(checkpoint());
  auto c = lb.client();
  Field ctrl = Field::map();
  ctrl.set("__ctrl__", Field::text("episode_start"));
  EXPECT_EQ(c.infer(ctrl).find("__ack__")->bytes, "episode_start");
  ctrl.set("__ctrl__", Field::text("something_else"));
  EXPECT_EQ(c.infer(ctrl).find("__ack__")->bytes, "ignored");
}

TEST(Serve, APortInUseIsAUserErrorNamingThePort) {
  Loopback lb(checkpoint());
  expect_has(test::error_of([&] { check_listen_address("127.0.0.1", lb.server->port()); }, ErrorKind::kInvalidArgument),
             "--port " + std::to_string(lb.server->port()) + ": address already in use");
  expect_has(test::error_of([&] { check_listen_address("203.0.113.7", 0); }, ErrorKind::kInvalidArgument), "--host 203.0.113.7");
}

// waits (bounded) until `ready` holds
template <typename F>
bool eventually(F ready) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!ready()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

TEST(Serve, StopAnswersTheRequestInFlightThenClosesEveryConnection) {
  // the request waits in the batcher (a batch of 2, a far timeout) until stop() drains it
  Loopback lb(checkpoint(), {.max_batch = 2, .batch_timeout_ms = 60000});
  auto bundle = train::load_policy(checkpoint(), at::kCPU);
  auto busy = lb.client();
  auto idle = lb.client();
  busy.send(encode(frame_observation(bundle, 3)));
  ASSERT_TRUE(eventually([&] { return lb.engine.queued() == 1; }));
  std::thread stopper([&] { lb.server->stop(); });
  auto reply = busy.receive();
  ASSERT_TRUE(reply.has_value());
  ASSERT_TRUE(reply->binary) << reply->data;
  EXPECT_EQ(actions_of(decode(reply->data)), train::predict_chunk(bundle, kFixture, 3, at::kCPU, 0).predicted);
  EXPECT_FALSE(busy.receive().has_value());
  EXPECT_EQ(busy.close_code(), 1001);
  EXPECT_FALSE(idle.receive().has_value());
  EXPECT_EQ(idle.close_code(), 1001);
  stopper.join();
  EXPECT_THROW(lb.client(), Error);  // no longer accepting
  EXPECT_EQ(lb.server->answered(), 1);
}

// --- garbage: each case on its own connection, beside one good client that keeps being served ---

struct Garbage {
  std::string name;
  std::function<void(Client& bad, const Field& good_obs)> act;  // sends the garbage
  std::string expect;  // in the error text frame; "" for cases that end without one
};

std::string frame_header(int opcode, uint64_t length) {
  std::string h(1, char(0x80 | opcode));  // FIN
  if (length < 126) {
    h += char(0x80 | length);  // masked
  } else if (length < 65536) {
    h += char(0x80 | 126), h += char(length >> 8), h += char(length & 0xff);
  } else {
    h += char(0x80 | 127);
    for (int i = 7; i >= 0; --i) h += char((length >> (8 * i)) & 0xff);
  }
  return h + std::string(4, '\0');  // mask key 0: the payload goes as it is
}

Field with(Field obs, const std::string& key, Field value) {
  obs.set(key, std::move(value));
  return obs;
}

int64_t rss_mb() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * sysconf(_SC_PAGESIZE) / (1 << 20);
}

const std::vector<Garbage>& garbage() {
  static const std::vector<Garbage> cases = {
      {"NotMsgpack", [](Client& c, const Field&) { c.send(std::string("\xc1\xc1 not msgpack")); }, "not msgpack"},
      {"ATextFrame", [](Client& c, const Field&) { c.send("{\"prompt\": \"hi\"}", /*binary=*/false); }, "got a text frame"},
      {"NotAMap", [](Client& c, const Field&) { c.send(encode(Field::text("observation"))); }, "the message is not a map"},
      {"UnknownKey", [](Client& c, const Field& o) { c.send(encode(with(o, "observation/extra", Field::real(1)))); },
       "unknown key 'observation/extra'"},
      {"MissingKey",
       [](Client& c, const Field& o) {
         Field m = Field::map();
         for (const auto& item : o.items)
           if (item.key != "prompt") m.items.push_back(item);
         c.send(encode(m));
       },
       "missing key 'prompt' or 'task'"},
      {"WrongDtype",
       [](Client& c, const Field& o) { c.send(encode(with(o, "observation/state", Field::ndarray("<i8", {8}, std::string(64, '\0'))))); },
       "key 'observation/state': dtype <i8"},
      {"WrongShape",
       [](Client& c, const Field& o) { c.send(encode(with(o, "observation/image", Field::ndarray("|u1", {8, 8, 4}, std::string(256, '\0'))))); },
       "key 'observation/image': image of shape [8, 8, 4]"},
      {"DataLengthDisagreesWithShape",
       [](Client& c, const Field& o) { c.send(encode(with(o, "observation/wrist_image", Field::ndarray("|u1", {8, 8, 3}, std::string(191, '\0'))))); },
       "key 'observation/wrist_image': its data holds 191 bytes, shape [8, 8, 3] of |u1 needs 192"},
      {"AnArrayClaimingTwoGigabytes",
       [](Client& c, const Field& o) { c.send(encode(with(o, "observation/image", Field::ndarray("|u1", {int64_t(1) << 31}, "xyz")))); },
       "needs 2147483648"},
      {"AMapHeaderClaimingFourBillionEntries", [](Client& c, const Field&) { c.send(std::string("\xdf\xff\xff\xff\xff", 5)); },
       "more than 4096"},
      {"NonFiniteState",
       [](Client& c, const Field& o) {
         std::vector<float> s(8, 0.0f);
         s[0] = std::numeric_limits<float>::infinity();
         c.send(encode(with(o, "observation/state", Field::ndarray("<f4", {8}, float_bytes(s)))));
       },
       "key 'observation/state': value 0 is not finite"},
      {"NoiseOfTheWrongShape",
       [](Client& c, const Field& o) { c.send(encode(with(o, "noise", Field::ndarray("<f4", {2}, std::string(8, '\0'))))); },
       "key 'noise': noise of shape [2]"},
      {"AMessageOfTwoGigabytesIsRefusedFromItsHeader",
       [](Client& c, const Field&) {
         const int64_t before = rss_mb();
         c.send_raw(frame_header(2, uint64_t(1) << 31) + "\x82\xa1");
         EXPECT_FALSE(c.receive().has_value());
         EXPECT_EQ(c.close_code(), 1009);  // too big, before any of it was read
         EXPECT_LT(rss_mb() - before, 256);
       },
       ""},
      {"AFrameCutInHalfThenDropped",
       [](Client& c, const Field& o) {
         const std::string whole = encode(o);
         c.send_raw(frame_header(2, whole.size()) + whole.substr(0, whole.size() / 2));
         c.drop();
       },
       ""},
      {"AConnectionDroppedMidRequest",
       [](Client& c, const Field& o) {
         c.send(encode(o));
         c.drop();
       },
       ""},
  };
  return cases;
}

class ServeGarbage : public ::testing::TestWithParam<size_t> {
 protected:
  static void SetUpTestSuite() {
    lb_ = std::make_unique<Loopback>(checkpoint());
    auto bundle = train::load_policy(checkpoint(), at::kCPU);
    good_obs_ = std::make_unique<Field>(frame_observation(bundle, 3));
    good_obs_->set("noise", noise_field(train::seeded_noise(bundle.shape, 7)));
    good_ = std::make_unique<Client>("127.0.0.1", lb_->server->port());
    want_ = actions_of(good_->infer(*good_obs_));
  }
  static void TearDownTestSuite() {
    good_.reset();
    lb_.reset();
  }
  static inline std::unique_ptr<Loopback> lb_;
  static inline std::unique_ptr<Client> good_;
  static inline std::unique_ptr<Field> good_obs_;
  static inline std::vector<std::vector<float>> want_;
};

TEST_P(ServeGarbage, CostsOnlyItsOwnConnection) {
  const Garbage& g = garbage()[GetParam()];
  {
    Client bad("127.0.0.1", lb_->server->port());
    // a frame cut short, left open: the server goes on serving others meanwhile
    if (g.name == "AFrameCutInHalfThenDropped") {
      const std::string whole = encode(*good_obs_);
      bad.send_raw(frame_header(2, whole.size()) + whole.substr(0, whole.size() / 2));
      expect_near(actions_of(good_->infer(*good_obs_)), want_);
      bad.drop();
    } else {
      g.act(bad, *good_obs_);
      if (!g.expect.empty()) expect_has(refusal(bad), g.expect);
    }
  }
  // the good client, on its one connection all along, is answered as before (the dropped
  // connection's request may share its batch)
  expect_near(actions_of(good_->infer(*good_obs_)), want_);
  // and new clients are welcome
  Client fresh("127.0.0.1", lb_->server->port());
  expect_near(actions_of(fresh.infer(*good_obs_)), want_);
}

INSTANTIATE_TEST_SUITE_P(Cases, ServeGarbage, ::testing::Range(size_t(0), garbage().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) { return garbage()[info.param].name; });

}  // namespace
}  // namespace ember::serve
