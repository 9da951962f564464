#include "gpu/driver.hpp"

#include <dlfcn.h>
#include <link.h>

#include <cstring>
#include <string>
#include <vector>

namespace attn::gpu {

namespace {

bool is_gl_driver(const char* path) {
    return std::strstr(path, "_dri.so") != nullptr || std::strstr(path, "libgallium") != nullptr ||
           std::strstr(path, "libGLX_mesa") != nullptr || std::strstr(path, "libEGL_mesa") != nullptr;
}

}  // namespace

void keep_gl_driver_loaded() {
    std::vector<std::string> drivers;
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* out) {
            if (info->dlpi_name != nullptr && is_gl_driver(info->dlpi_name))
                static_cast<std::vector<std::string>*>(out)->push_back(info->dlpi_name);
            return 0;
        },
        &drivers);
    // RTLD_NOLOAD: only a library already loaded; RTLD_NODELETE: never unloaded from now on.
    // The handle's own reference is kept on purpose.
    for (const std::string& path : drivers) dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
}

}  // namespace attn::gpu
