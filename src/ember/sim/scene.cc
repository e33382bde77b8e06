#include "ember/sim/scene.h"

#include <cstdlib>
#include <filesystem>

#include "ember/core/error.h"

namespace ember::sim {

std::string default_asset_dir() {
  if (const char* env = std::getenv("EMBER_SIM_ASSETS"); env && *env) return env;
  return EMBER_SIM_ASSET_DIR;
}

namespace {
// MuJoCo's default error handler exits the process; ember's errors are exceptions.
void throw_mujoco_error(const char* msg) { throw Error(ErrorKind::kInternal, std::string("MuJoCo: ") + msg); }
}  // namespace

std::shared_ptr<const Scene> Scene::load(const std::string& xml_path) {
  mju_user_error = throw_mujoco_error;
  if (!std::filesystem::exists(xml_path))
    fail(ErrorKind::kNotFound, xml_path + ": scene file not found (set EMBER_SIM_ASSETS to the assets/sim folder)");
  char err[1024] = {0};
  mjModel* m = mj_loadXML(xml_path.c_str(), nullptr, err, sizeof(err));
  if (!m) fail(ErrorKind::kCorruption, xml_path + ": MuJoCo cannot load the scene: " + err);
  std::shared_ptr<Scene> s(new Scene());
  s->model_ = m;
  s->xml_path_ = xml_path;
  s->ee_site = mj_name2id(m, mjOBJ_SITE, "ee");
  if (s->ee_site < 0) fail(ErrorKind::kCorruption, xml_path + ": no site 'ee'");
  for (int i = 0; i < kArmDof; ++i) {
    int j = s->joint("j" + std::to_string(i + 1));
    s->arm_qpos[i] = m->jnt_qposadr[j];
    s->arm_dof[i] = m->jnt_dofadr[j];
  }
  const char* fingers[2] = {"finger_left", "finger_right"};
  for (int i = 0; i < 2; ++i) {
    int j = s->joint(fingers[i]);
    s->finger_qpos[i] = m->jnt_qposadr[j];
    s->finger_dof[i] = m->jnt_dofadr[j];
    s->finger_body[i] = s->body(fingers[i]);
  }
  s->hand_body = s->body("hand");
  s->agentview_camera = s->camera("agentview");
  s->wrist_camera = s->camera("wrist");
  s->home_key = mj_name2id(m, mjOBJ_KEY, "home");
  if (s->home_key < 0) fail(ErrorKind::kCorruption, xml_path + ": no keyframe 'home'");
  for (int i = 0; i < kArmDof; ++i) s->home_qpos[i] = m->key_qpos[s->home_key * m->nq + s->arm_qpos[i]];
  return s;
}

Scene::~Scene() {
  if (model_) mj_deleteModel(model_);
}

namespace {
int lookup(const mjModel* m, mjtObj type, const std::string& name, const char* what) {
  int id = mj_name2id(m, type, name.c_str());
  if (id < 0) fail(ErrorKind::kInternal, std::string("scene has no ") + what + " '" + name + "'");
  return id;
}
}  // namespace

int Scene::body(const std::string& name) const { return lookup(model_, mjOBJ_BODY, name, "body"); }
int Scene::joint(const std::string& name) const { return lookup(model_, mjOBJ_JOINT, name, "joint"); }
int Scene::camera(const std::string& name) const { return lookup(model_, mjOBJ_CAMERA, name, "camera"); }

}  // namespace ember::sim
