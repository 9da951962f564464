#pragma once
// An environment variable set (or, with nullopt, unset) for a test's scope, and put back as it
// was when the scope ends: HF_HUB_CACHE, HF_ENDPOINT, HF_TOKEN, HOME in the cache and hub tests.
#include <cstdlib>
#include <optional>
#include <string>

namespace attn::testing {

class Environment {
public:
    Environment(const char* name, std::optional<std::string> value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        if (value) ::setenv(name, value->c_str(), 1);
        else ::unsetenv(name);
    }
    ~Environment() {
        if (old_) ::setenv(name_, old_->c_str(), 1);
        else ::unsetenv(name_);
    }
    Environment(const Environment&) = delete;
    Environment& operator=(const Environment&) = delete;

private:
    const char* name_;
    std::optional<std::string> old_;
};

}  // namespace attn::testing
