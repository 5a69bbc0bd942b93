#include "kernel_names.h"

namespace tailcut::core {

void KernelNames::Offer(const std::unordered_set<std::string>& kernels, KernelBits* bits) {
  for (const std::string& k : kernels) {
    auto [it, fresh] = ids_.try_emplace(k, 0);
    if (fresh) {
      if (free_.empty()) {
        it->second = static_cast<uint32_t>(names_.size());
        names_.push_back(nullptr);
        offering_.push_back(0);
      } else {
        it->second = free_.back();
        free_.pop_back();
      }
      names_[it->second] = &it->first;
      ++epoch_;
    }
    ++offering_[it->second];
    bits->Add(it->second);
  }
}

void KernelNames::Withdraw(const KernelBits& bits) {
  bits.ForEach([&](uint32_t id) {
    if (--offering_[id] > 0) return;
    ids_.erase(*names_[id]);
    names_[id] = nullptr;
    free_.push_back(id);
    ++epoch_;
  });
}

}  // namespace tailcut::core
