// Batched rendering (many views per call) and render processes (one GL context per process)
// give exactly the images of one view at a time on the thread; a render process
// that dies or cannot render is an error naming it, never a hang. OSMesa (skips with the
// reason where it is unavailable). This binary is its own render worker: main() below.
#include <gtest/gtest.h>
#include <signal.h>

#include "ember/core/error.h"
#include "ember/sim/render.h"
#include "ember/sim/render_process.h"
#include "ember/sim/vector_env.h"
#include "sim/require_osmesa.h"
#include "test_util.h"

namespace ember::sim {
namespace {

// Three envs of different tasks and states, a few steps in.
struct Envs {
  std::shared_ptr<const Scene> scene = Scene::load();
  std::vector<std::unique_ptr<Env>> envs;
  Envs() {
    const char* tasks[] = {"pick_red_into_tray", "press_blue_button", "push_green_to_pad"};
    for (int i = 0; i < 3; ++i) {
      envs.push_back(std::make_unique<Env>(scene));
      const TaskSpec& t = find_task(tasks[i]);
      envs.back()->reset(t, eval_init_states(t)[i + 1]);
      Action a{};
      a[0] = 0.5f * float(i - 1), a[2] = -1, a[6] = 1;
      for (int k = 0; k < 2 + i; ++k) envs.back()->step(a);
    }
  }
};

// OSMesa draws every view at the same place in its buffer, one per read-back, whatever batch is
// asked for: its pixels' last bits depend on where a view lies (render.cc), and a batch must not
// change an image. (EGL draws a batch as tiles, 2 x 2 here; GPU machines only.)
TEST(SimRenderBatch, BatchOfViewsEqualsOneViewAtATime) {
  REQUIRE_OSMESA();
  Envs e;
  const int S = 40;
  CameraRenderer one(*e.scene, RendererKind::kOSMesa, S, S, 1);
  CameraRenderer grid(*e.scene, RendererKind::kOSMesa, S, S, 4);
  ASSERT_EQ(grid.max_views(), 1);
  std::vector<std::vector<uint8_t>> a(6, std::vector<uint8_t>(S * S * 3)), b = a;
  std::vector<View> views;
  for (int i = 0; i < 3; ++i)
    for (int cam : {e.scene->agentview_camera, e.scene->wrist_camera}) {
      views.push_back({e.envs[size_t(i)]->data(), cam, b[views.size()].data()});
      one.render(e.envs[size_t(i)]->data(), cam, a[views.size() - 1].data());
    }
  grid.render_views(views.data(), int(views.size()));
  for (size_t k = 0; k < a.size(); ++k) EXPECT_EQ(a[k], b[k]) << "view " << k;
  for (size_t k = 1; k < a.size(); ++k) EXPECT_NE(a[k], a[k - 1]) << "views " << k - 1 << " and " << k << " differ";
}

// Same episodes, same actions: every observation's images equal with any renderer layout.
TEST(SimRenderBatch, VectorEnvImagesEqualOverLayouts) {
  REQUIRE_OSMESA();
  const TaskSpec& t1 = find_task("pick_red_into_tray");
  const TaskSpec& t2 = find_task("press_blue_button");
  auto scene = Scene::load();
  auto run = [&](bool batch, bool process) {
    VectorEnvConfig c;
    c.n_envs = 5;
    c.threads = 2;
    c.renderer = RendererKind::kOSMesa;
    c.image_size = 32;
    c.batch_rendering = batch;
    c.render_layout = process ? RenderLayout::kProcess : RenderLayout::kThread;
    VectorEnv venv(scene, {&t1, &t2}, c);
    std::vector<std::vector<Observation>> all{venv.reset(3)};
    std::vector<Action> actions(5);
    for (int k = 0; k < 3; ++k) {
      for (int i = 0; i < 5; ++i) actions[size_t(i)] = {0.3f * float(i - 2), 0.2f, -0.5f, 0, 0, 0, float(k % 2)};
      all.push_back(venv.step(actions).observations);
    }
    return all;
  };
  auto reference = run(false, false);
  for (auto [batch, process] : {std::pair{true, false}, {true, true}, {false, true}}) {
    auto got = run(batch, process);
    ASSERT_EQ(got.size(), reference.size());
    for (size_t k = 0; k < got.size(); ++k)
      for (size_t i = 0; i < got[k].size(); ++i) {
        ASSERT_EQ(got[k][i].width, 32);
        EXPECT_EQ(got[k][i].agentview, reference[k][i].agentview) << "batch " << batch << " process " << process << " step " << k << " env " << i;
        EXPECT_EQ(got[k][i].wrist, reference[k][i].wrist) << "batch " << batch << " process " << process << " step " << k << " env " << i;
      }
  }
}

TEST(SimRenderBatch, ADeadRenderProcessIsAnErrorNamingIt) {
  REQUIRE_OSMESA();
  Envs e;
  RenderProcess p(*e.scene, RendererKind::kOSMesa, 16, 2);
  std::vector<uint8_t> a(16 * 16 * 3), w(a.size());
  const mjData* d = e.envs[0]->data();
  uint8_t* av = a.data();
  uint8_t* wr = w.data();
  p.render(&d, 1, &av, &wr);
  ASSERT_EQ(kill(p.pid(), SIGKILL), 0);
  const std::string pid = std::to_string(p.pid());
  auto msg = test::error_of([&] { p.render(&d, 1, &av, &wr); }, ErrorKind::kInternal);
  EXPECT_NE(msg.find("render process " + pid + " was killed by signal 9"), std::string::npos) << msg;
  msg = test::error_of([&] { p.render(&d, 1, &av, &wr); }, ErrorKind::kInternal);
  EXPECT_NE(msg.find("the child is gone"), std::string::npos) << msg;
}

TEST(SimRenderBatch, AChildThatCannotRenderSaysWhy) {
  // EGL device 99 exists nowhere: the child's own message comes back
  ::setenv("EMBER_EGL_DEVICE", "99", 1);
  auto scene = Scene::load();
  auto msg = test::error_of([&] { RenderProcess p(*scene, RendererKind::kEGL, 16, 1); }, ErrorKind::kUnsupported);
  ::unsetenv("EMBER_EGL_DEVICE");
  EXPECT_NE(msg.find("--renderer egl"), std::string::npos) << msg;
}

}  // namespace
}  // namespace ember::sim

int main(int argc, char** argv) {
  if (int rc = ember::sim::run_render_worker_if_asked(argc, argv); rc >= 0) return rc;
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
