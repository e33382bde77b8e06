// Gloo behind c10d, in its own translation unit: libtorch's ProcessGroupGloo.hpp needs Gloo's
// headers (Debian's libgloo-dev; the torch wheel does not ship them), which GPU nodes may lack.
// Builds without them (EMBER_HAVE_GLOO unset) refuse CPU jobs of more than one rank.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <string>

namespace ember::dist {

// A Gloo process group over store. It binds to the interface named by GLOO_SOCKET_IFNAME, else to
// the local address that routes to master_addr. Throws Error kUnsupported in a build without
// Gloo; c10::Error from c10d when peers do not connect within timeout.
c10::intrusive_ptr<c10d::Backend> make_gloo_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                    const std::string& master_addr, int master_port,
                                                    std::chrono::milliseconds timeout);

}  // namespace ember::dist
