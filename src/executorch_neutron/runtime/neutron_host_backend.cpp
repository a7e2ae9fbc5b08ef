/*
 * Host NeutronBackend: registers, with the ExecuTorch runtime that ships in the executorch wheel
 * (libexecutorch.so), the backend id Python passes (executorch_neutron.backend.BACKEND_ID: the Python backend
 * class's name, which ExecuTorch writes into each delegate of a .pte), so the stock Python runtime can execute
 * every Neutron delegate call of a .pte on a Linux host.
 *
 * The C++ side is deliberately thin: init() keeps a private copy of the delegate blob, execute() describes each
 * delegate argument (data pointer, byte size, dtype, sizes, dim order) in a plain C struct and hands blob and
 * arguments to a callback installed from Python (executorch_neutron.runtime.bridge), which interprets the payload.
 * A failing callback returns an ExecuTorch error code and a message; the message is kept as the library's
 * "last error" so the Python caller can raise it.
 *
 * The same class is registered a second time under "EthosUBackend" (neutron_host_register, once per id): the Python
 * executor tells the two payload kinds apart by their first bytes and runs an Ethos-U partition's reference TFLite.
 *
 * Built on first use by executorch_neutron.runtime.build with the machine's g++.
 */

#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/core/error.h>
#include <executorch/runtime/core/evalue.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <new>
#include <string>
#include <vector>

namespace {

using executorch::runtime::ArrayRef;
using executorch::runtime::Backend;
using executorch::runtime::BackendExecutionContext;
using executorch::runtime::BackendInitContext;
using executorch::runtime::BackendInterface;
using executorch::runtime::CompileSpec;
using executorch::runtime::DelegateHandle;
using executorch::runtime::Error;
using executorch::runtime::EValue;
using executorch::runtime::FreeableBuffer;
using executorch::runtime::Result;
using executorch::runtime::Span;

constexpr int kMaxDims = 16;
constexpr uint32_t kAbiVersion = 2;
constexpr size_t kErrorCapacity = 2048;

}  // namespace

extern "C" {

/* One delegate argument as seen by the Python executor. Keep in sync with bridge.py (_HostTensor). */
struct NeutronHostTensor {
  void* data;          /* first byte of the tensor storage (nullptr when not a tensor) */
  uint64_t nbytes;     /* size of the storage in bytes */
  int32_t is_tensor;   /* 0: the EValue is not a tensor (int, list, ...) */
  int32_t dtype;       /* ExecuTorch ScalarType code */
  int32_t ndim;        /* number of dimensions (<= 16) */
  int32_t reserved;
  int64_t sizes[kMaxDims];
  uint8_t dim_order[kMaxDims];
};

/* Returns 0 (Error::Ok) or an ExecuTorch error code; on error writes a NUL-terminated message into err. */
typedef int32_t (*neutron_execute_fn)(uint64_t handle_id, const uint8_t* blob, uint64_t blob_len,
                                      const NeutronHostTensor* args, uint64_t n_args, char* err,
                                      uint64_t err_len);
/* Tells the executor that a handle is gone so it can drop what it cached for it. */
typedef void (*neutron_release_fn)(uint64_t handle_id);

}  // extern "C"

namespace {

struct Handle {
  uint64_t id;
  std::vector<uint8_t> blob;
};

std::mutex g_mutex;
neutron_execute_fn g_execute = nullptr;
neutron_release_fn g_release = nullptr;
thread_local std::string g_last_error;  // per thread: the caller of execute() reads its own failure
std::atomic<uint64_t> g_next_id{1};

void set_last_error(const std::string& message) { g_last_error = message; }

class NeutronHostBackend final : public BackendInterface {
 public:
  bool is_available() const override { return true; }

  Result<DelegateHandle*> init(BackendInitContext& /*context*/, FreeableBuffer* processed,
                               ArrayRef<CompileSpec> /*compile_specs*/) const override {
    if (processed == nullptr || processed->data() == nullptr || processed->size() == 0) {
      set_last_error("NeutronBackend: the delegate blob is empty; re-export the .pte with executorch_neutron");
      return Error::InvalidProgram;
    }
    Handle* handle = new (std::nothrow) Handle();
    if (handle == nullptr) {
      set_last_error("NeutronBackend: out of memory while keeping the delegate blob");
      return Error::MemoryAllocationFailed;
    }
    const uint8_t* bytes = static_cast<const uint8_t*>(processed->data());
    handle->blob.assign(bytes, bytes + processed->size());
    handle->id = g_next_id.fetch_add(1);
    processed->Free();
    return handle;
  }

  Error execute(BackendExecutionContext& /*context*/, DelegateHandle* opaque,
                Span<EValue*> args) const override {
    Handle* handle = static_cast<Handle*>(opaque);
    neutron_execute_fn callback;
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      callback = g_execute;
    }
    if (handle == nullptr) {
      set_last_error("NeutronBackend: execute() called without a delegate handle");
      return Error::InvalidState;
    }
    if (callback == nullptr) {
      set_last_error(
          "NeutronBackend: no host executor is installed; load the .pte through executorch_neutron.runtime.run()");
      return Error::InvalidState;
    }
    std::vector<NeutronHostTensor> described(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      NeutronHostTensor& d = described[i];
      std::memset(&d, 0, sizeof(d));
      if (args[i] == nullptr || !args[i]->isTensor()) {
        continue;
      }
      const auto& t = args[i]->toTensor();
      if (t.dim() > kMaxDims) {
        set_last_error("NeutronBackend: argument " + std::to_string(i) + " has " + std::to_string(t.dim()) +
                       " dimensions; the host runtime supports at most 16");
        return Error::NotSupported;
      }
      d.is_tensor = 1;
      d.data = t.mutable_data_ptr();
      d.nbytes = t.nbytes();
      d.dtype = static_cast<int32_t>(t.scalar_type());
      d.ndim = static_cast<int32_t>(t.dim());
      const auto sizes = t.sizes();
      const auto order = t.dim_order();
      for (ssize_t k = 0; k < t.dim(); ++k) {
        d.sizes[k] = sizes[k];
        d.dim_order[k] = k < static_cast<ssize_t>(order.size()) ? order[k] : static_cast<uint8_t>(k);
      }
    }
    char message[kErrorCapacity];
    message[0] = '\0';
    int32_t code = callback(handle->id, handle->blob.data(), handle->blob.size(), described.data(),
                            described.size(), message, sizeof(message));
    if (code == 0) {
      return Error::Ok;
    }
    message[sizeof(message) - 1] = '\0';
    set_last_error(message[0] != '\0' ? std::string(message)
                                      : std::string("NeutronBackend: the host executor failed without a message"));
    return static_cast<Error>(code);
  }

  void destroy(DelegateHandle* opaque) const override {
    Handle* handle = static_cast<Handle*>(opaque);
    if (handle == nullptr) {
      return;
    }
    neutron_release_fn release;
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      release = g_release;
    }
    if (release != nullptr) {
      release(handle->id);
    }
    delete handle;
  }
};

// One backend object per registered id (NeutronBackend, EthosUBackend). ExecuTorch's registry keeps the name
// pointer and the object: both live as long as the process (a deque never moves its elements).
struct Registration {
  std::string id;
  NeutronHostBackend backend;
  int32_t status = -1;
};
std::deque<Registration> g_registrations;
std::mutex g_register_mutex;

}  // namespace

extern "C" {

uint32_t neutron_host_abi_version(void) { return kAbiVersion; }

uint64_t neutron_host_tensor_struct_size(void) { return sizeof(NeutronHostTensor); }

/* Registers the host backend under `backend_id` (once per id and process; the same callbacks serve every id);
 * returns the ExecuTorch error code of that id's registration. */
int32_t neutron_host_register(const char* backend_id) {
  std::lock_guard<std::mutex> lock(g_register_mutex);
  const std::string id = backend_id != nullptr ? backend_id : "";
  for (const Registration& r : g_registrations) {
    if (r.id == id) {
      return r.status;
    }
  }
  Registration& r = g_registrations.emplace_back();
  r.id = id;
  r.status = static_cast<int32_t>(executorch::runtime::register_backend(Backend{r.id.c_str(), &r.backend}));
  return r.status;
}

void neutron_host_set_callbacks(neutron_execute_fn execute, neutron_release_fn release) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_execute = execute;
  g_release = release;
}

/* Copies the calling thread's last error message into out (NUL-terminated); returns its full length. */
uint64_t neutron_host_last_error(char* out, uint64_t capacity) {
  if (out != nullptr && capacity > 0) {
    size_t n = g_last_error.size() < capacity - 1 ? g_last_error.size() : capacity - 1;
    std::memcpy(out, g_last_error.data(), n);
    out[n] = '\0';
  }
  return g_last_error.size();
}

void neutron_host_clear_error(void) { g_last_error.clear(); }

}  // extern "C"
