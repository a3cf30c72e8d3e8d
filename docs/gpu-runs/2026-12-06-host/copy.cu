// Pageable vs pinned device-to-host copies of a logits-sized buffer.
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
int main() {
  for (size_t mb : {1, 8, 32}) {
    size_t n = mb << 20;
    void *d; cudaMalloc(&d, n); cudaMemset(d, 1, n);
    std::vector<char> pageable(n);
    void *pinned; cudaMallocHost(&pinned, n);
    for (int kind = 0; kind < 3; ++kind) {
      void *h = kind == 1 ? pinned : pageable.data();
      if (kind == 2) cudaHostRegister(pageable.data(), n, 0);
      double best = 1e9, sum = 0;
      for (int rep = 0; rep < 20; ++rep) {
        auto t0 = std::chrono::steady_clock::now();
        cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost);
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (rep) { best = ms < best ? ms : best; sum += ms; }
      }
      std::printf("DtoH %2zu MiB %-10s best %.3f ms mean %.3f ms (%.2f GB/s)\n", mb,
                  kind == 0 ? "pageable" : kind == 1 ? "pinned" : "registered", best, sum / 19, n / best / 1e6);
      if (kind == 2) cudaHostUnregister(pageable.data());
    }
    auto t0 = std::chrono::steady_clock::now();
    for (int rep = 0; rep < 10; ++rep) std::memcpy(pinned, pageable.data(), n);
    std::printf("host memcpy %2zu MiB %.3f ms\n", mb,
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / 10);
    auto t1 = std::chrono::steady_clock::now();
    for (int rep = 0; rep < 10; ++rep) { cudaHostRegister(pageable.data(), n, 0); cudaHostUnregister(pageable.data()); }
    std::printf("register+unregister %2zu MiB %.3f ms\n", mb,
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count() / 10);
    cudaFree(d); cudaFreeHost(pinned);
  }
}
