#include "ember/dist/gloo_backend.h"

#include <cstdlib>

#include "ember/core/error.h"
#include "ember/dist/process_group.h"

#if EMBER_HAVE_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif

namespace ember::dist {

c10::intrusive_ptr<c10d::Backend> make_gloo_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                    const std::string& master_addr, int master_port,
                                                    std::chrono::milliseconds timeout) {
#if EMBER_HAVE_GLOO
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
  if (ifname && *ifname) {
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
  } else {
    // the address peers can reach: the one this host uses towards the master (loopback for a
    // one-node job, the cluster interface across nodes)
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(local_address_towards(master_addr, master_port)));
  }
  options->threads = 2;
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options);
#else
  (void)store, (void)rank, (void)size, (void)master_addr, (void)master_port, (void)timeout;
  throw Error(ErrorKind::kUnsupported,
              "this ember was built without Gloo (libgloo-dev's headers): CPU jobs of more than one rank need it");
#endif
}

}  // namespace ember::dist
