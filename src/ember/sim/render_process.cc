#include "ember/sim/render_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "ember/core/error.h"
#include "ember/sim/render.h"

extern char** environ;

namespace ember::sim {

namespace {

// The shared memory: this header, then max_envs states (qpos, mocap_pos, mocap_quat, and the
// cameras' and lights' poses as doubles), then max_envs x 2 images. The poses travel as they
// are: Env::step leaves them from the last substep's mj_camlight (not recomputed at the final
// qpos), and the child must draw what the parent would.
struct Header {
  int32_t n = 0;             // envs in the current request
  int32_t nq = 0, nmocap = 0, image_size = 0, max_envs = 0;
  char error[1024] = {0};    // the child's message with an 'e' answer
};
constexpr int kShmFd = 3, kSockFd = 4;  // the child's descriptors

size_t align(size_t n) { return (n + 4095) / 4096 * 4096; }
size_t state_doubles(const mjModel* m) {
  return size_t(m->nq) + 7 * size_t(m->nmocap) + 12 * size_t(m->ncam) + 6 * size_t(m->nlight);
}

// The fields of d that travel, in order, with their sizes.
template <class D, class F>
void state_fields(const mjModel* m, D* d, F&& f) {
  f(d->qpos, size_t(m->nq));
  f(d->mocap_pos, 3 * size_t(m->nmocap));
  f(d->mocap_quat, 4 * size_t(m->nmocap));
  f(d->cam_xpos, 3 * size_t(m->ncam));
  f(d->cam_xmat, 9 * size_t(m->ncam));
  f(d->light_xpos, 3 * size_t(m->nlight));
  f(d->light_xdir, 3 * size_t(m->nlight));
}
size_t states_offset() { return align(sizeof(Header)); }
size_t pixels_offset(const mjModel* m, int max_envs) { return states_offset() + align(state_doubles(m) * max_envs * sizeof(double)); }
size_t image_bytes(int s) { return size_t(s) * s * 3; }
size_t shm_bytes(const mjModel* m, int s, int max_envs) { return pixels_offset(m, max_envs) + align(2 * image_bytes(s) * max_envs); }

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

// a descriptor numbered above the child's fixed ones (posix_spawn's dup2 onto itself would
// leave close-on-exec set)
int above_fixed(int fd) {
  if (fd > kSockFd) return fd;
  int moved = fcntl(fd, F_DUPFD_CLOEXEC, 16);
  close(fd);
  return moved;
}

bool send_byte(int sock, char c) {
  for (;;) {
    ssize_t k = send(sock, &c, 1, MSG_NOSIGNAL);
    if (k == 1) return true;
    if (k < 0 && errno == EINTR) continue;
    return false;
  }
}
// the byte, or 0 at end of file / error
char recv_byte(int sock) {
  char c = 0;
  for (;;) {
    ssize_t k = recv(sock, &c, 1, 0);
    if (k == 1) return c;
    if (k < 0 && errno == EINTR) continue;
    return 0;
  }
}

}  // namespace

RenderProcess::RenderProcess(const Scene& scene, RendererKind kind, int image_size, int max_envs)
    : scene_(scene), image_size_(image_size), max_envs_(max_envs) {
  if (kind == RendererKind::kNone) fail(ErrorKind::kInvalidArgument, "render process: --renderer none");
  if (max_envs < 1) fail(ErrorKind::kInvalidArgument, "render process: max_envs must be >= 1");
  const mjModel* m = scene.model();
  bytes_ = shm_bytes(m, image_size, max_envs);
  shm_fd_ = above_fixed(memfd_create("ember-render", MFD_CLOEXEC));
  if (shm_fd_ < 0) fail(ErrorKind::kInternal, errno_text("render process: memfd_create"));
  if (ftruncate(shm_fd_, off_t(bytes_)) != 0) fail(ErrorKind::kInternal, errno_text("render process: ftruncate"));
  void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, shm_fd_, 0);
  if (p == MAP_FAILED) fail(ErrorKind::kInternal, errno_text("render process: mmap"));
  shm_ = static_cast<uint8_t*>(p);
  auto* h = new (shm_) Header();
  h->nq = m->nq, h->nmocap = m->nmocap, h->image_size = image_size, h->max_envs = max_envs;

  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) fail(ErrorKind::kInternal, errno_text("render process: socketpair"));
  sock_ = above_fixed(sv[0]);
  const int child_sock = above_fixed(sv[1]);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, shm_fd_, kShmFd);
  posix_spawn_file_actions_adddup2(&fa, child_sock, kSockFd);
  const std::string exe = "/proc/self/exe";
  std::vector<std::string> args = {exe, kRenderWorkerFlag, renderer_name(kind), std::to_string(image_size), std::to_string(max_envs),
                                   std::to_string(bytes_), scene.xml_path()};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int rc = posix_spawn(&pid_, exe.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(child_sock);
  if (rc != 0) {
    pid_ = -1;
    errno = rc;
    fail(ErrorKind::kInternal, errno_text("render process: posix_spawn " + exe));
  }
  const char c = recv_byte(sock_);
  if (c == 'k') return;
  if (c == 'e') {
    std::string msg(h->error);
    close(sock_), sock_ = -1;
    waitpid(pid_, nullptr, 0), pid_ = -1;
    fail_unsupported(msg);
  }
  child_gone();
}

RenderProcess::~RenderProcess() {
  if (sock_ >= 0) close(sock_);  // the child reads end of file and exits
  if (pid_ > 0) waitpid(pid_, nullptr, 0);
  if (shm_) munmap(shm_, bytes_);
  if (shm_fd_ >= 0) close(shm_fd_);
}

void RenderProcess::child_gone() {
  int status = 0;
  std::string how = "ended";
  if (pid_ > 0 && waitpid(pid_, &status, 0) == pid_) {
    how = WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                              : "exited with status " + std::to_string(WEXITSTATUS(status));
  }
  const pid_t pid = pid_;
  pid_ = -1;
  fail(ErrorKind::kInternal, "render process " + std::to_string(pid) + " " + how + " (its error, if any, is on stderr above)");
}

void RenderProcess::render(const mjData* const* states, int n, uint8_t* const* agentview, uint8_t* const* wrist) {
  if (n < 1 || n > max_envs_)
    fail(ErrorKind::kInternal, "render process: " + std::to_string(n) + " states for at most " + std::to_string(max_envs_));
  if (pid_ < 0) fail(ErrorKind::kInternal, "render process: the child is gone");
  const mjModel* m = scene_.model();
  auto* h = reinterpret_cast<Header*>(shm_);
  auto* s = reinterpret_cast<double*>(shm_ + states_offset());
  for (int i = 0; i < n; ++i)
    state_fields(m, states[i], [&](const double* field, size_t k) { std::memcpy(s, field, sizeof(double) * k), s += k; });
  h->n = n;
  if (!send_byte(sock_, 'r')) child_gone();
  const char c = recv_byte(sock_);
  if (c == 'e') fail(ErrorKind::kInternal, std::string("render process: ") + h->error);
  if (c != 'k') child_gone();
  const uint8_t* px = shm_ + pixels_offset(m, max_envs_);
  const size_t b = image_bytes(image_size_);
  for (int i = 0; i < n; ++i) {
    std::memcpy(agentview[i], px + size_t(2 * i) * b, b);
    std::memcpy(wrist[i], px + size_t(2 * i + 1) * b, b);
  }
}

namespace {

int serve(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "ember: error: %s: expected 5 arguments\n", kRenderWorkerFlag);
    return 2;
  }
  // the parent's end of the socket is gone when it exits; nothing else may stop this loop: not
  // the Ctrl-C or `timeout`'s SIGTERM that reach the whole process group while the parent, which
  // may be finishing a step to save it (core/stop_signal.h), still needs its renders
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  const RendererKind kind = parse_renderer(argv[2]);
  const int image_size = std::atoi(argv[3]), max_envs = std::atoi(argv[4]);
  const size_t bytes = size_t(std::atoll(argv[5]));
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, kShmFd, 0);
  if (p == MAP_FAILED) {
    std::fprintf(stderr, "ember: error: render process: mmap of the shared memory: %s\n", std::strerror(errno));
    return 2;
  }
  auto* shm = static_cast<uint8_t*>(p);
  auto* h = reinterpret_cast<Header*>(shm);
  auto answer_error = [&](const std::string& msg) {
    std::snprintf(h->error, sizeof(h->error), "%s", msg.c_str());
    send_byte(kSockFd, 'e');
  };
  std::shared_ptr<const Scene> scene;
  std::unique_ptr<CameraRenderer> renderer;
  try {
    scene = Scene::load(argv[6]);
    const mjModel* m = scene->model();
    if (m->nq != h->nq || m->nmocap != h->nmocap || bytes != shm_bytes(m, image_size, max_envs))
      fail(ErrorKind::kInternal, "render process: the scene differs from the parent's");
    renderer = std::make_unique<CameraRenderer>(*scene, kind, image_size, image_size, 2 * max_envs);
  } catch (const std::exception& e) {
    answer_error(e.what());
    return 2;
  }
  const mjModel* m = scene->model();
  // one mjData per env of a request: the views of one render_views() call read them all
  std::vector<mjData*> ds(size_t(max_envs), nullptr);
  for (auto& di : ds) {
    di = mj_makeData(m);
    if (!di) {
      answer_error("render process: mj_makeData failed (out of memory?)");
      return 2;
    }
  }
  std::vector<View> views(size_t(2 * max_envs));
  if (!send_byte(kSockFd, 'k')) return 0;
  const size_t b = image_bytes(image_size);
  for (;;) {
    const char c = recv_byte(kSockFd);
    if (c != 'r') break;  // the parent is gone (end of file) or done
    try {
      const int n = h->n;
      if (n < 1 || n > max_envs) fail(ErrorKind::kInternal, "render process: bad request size " + std::to_string(n));
      const double* s = reinterpret_cast<const double*>(shm + states_offset());
      uint8_t* px = shm + pixels_offset(m, max_envs);
      for (int i = 0; i < n; ++i) {
        mjData* di = ds[size_t(i)];
        state_fields(m, di, [&](double* field, size_t k) { std::memcpy(field, s, sizeof(double) * k), s += k; });
        // bodies, geoms and sites from qpos and mocap (the camera and light poses stay as sent)
        mj_kinematics(m, di);
        mj_comPos(m, di);
        views[size_t(2 * i)] = {di, scene->agentview_camera, px + size_t(2 * i) * b};
        views[size_t(2 * i + 1)] = {di, scene->wrist_camera, px + size_t(2 * i + 1) * b};
      }
      renderer->render_views(views.data(), 2 * n);
    } catch (const std::exception& e) {
      answer_error(e.what());
      continue;
    }
    if (!send_byte(kSockFd, 'k')) break;
  }
  renderer.reset();
  for (mjData* di : ds) mj_deleteData(di);
  return 0;
}

}  // namespace

int run_render_worker_if_asked(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], kRenderWorkerFlag) != 0) return -1;
  return serve(argc, argv);
}

}  // namespace ember::sim
