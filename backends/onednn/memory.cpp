// Descriptors, views, host <-> engine copies and renewable storage (memory.hpp).

#include "backends/onednn/memory.hpp"

#include <stdexcept>
#include <string>

#include "backends/onednn/primitives.hpp"

namespace pb::onednn_backend {

using dnnl::memory;

namespace {

memory::data_type data_type_of(const memory::desc& desc) {
#if DNNL_VERSION_MAJOR >= 3
  return desc.get_data_type();
#else
  return desc.data_type();
#endif
}

}  // namespace

memory::desc dense(const Dims& dims) {
  Dims strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * dims[i];
  return {dims, memory::data_type::f32, strides};
}

memory::desc strided(const Dims& dims, const Dims& strides) {
  return {dims, memory::data_type::f32, strides};
}

Dims dims_of(const memory::desc& desc) {
#if DNNL_VERSION_MAJOR >= 3
  return desc.get_dims();
#else
  return desc.dims();
#endif
}

Dims strides_of(const memory::desc& desc) {
#if DNNL_VERSION_MAJOR >= 3
  return desc.get_strides();
#else
  const auto& blocking = desc.data.format_desc.blocking;
  return Dims(blocking.strides, blocking.strides + desc.data.ndims);
#endif
}

memory view(const memory& base, const memory::desc& desc, int64_t offset) {
  const Dims dims = dims_of(desc), strides = strides_of(desc);
  int64_t last = offset;
  for (size_t i = 0; i < dims.size(); ++i) last += (dims[i] - 1) * strides[i];
  const size_t element = memory::data_type_size(data_type_of(desc));
  const auto available = static_cast<int64_t>(base.get_desc().get_size() / element);
  if (offset < 0 || last >= available) throw std::out_of_range("a view past the end of its base memory");
  return memory(desc, base.get_engine(), static_cast<char*>(base.get_data_handle()) + offset * element);
}

int64_t checked_first(int64_t first, int64_t count, int64_t total, const char* what) {
  if (first < 0 || count < 0 || first + count > total)
    throw std::out_of_range(std::string(what) + " [" + std::to_string(first) + ", " + std::to_string(first + count) +
                            ") is outside [0, " + std::to_string(total) + ")");
  return first;
}

memory upload(const memory::desc& desc, const std::vector<float>& values) {
  memory array = allocate(desc);
  write_floats(array, values);
  return array;
}

memory upload(const pb::HostArray& array, const Dims& dims) { return upload(dense(dims), array.to_floats()); }

memory filled(const Dims& dims, float value) {
  return upload(dense(dims), std::vector<float>(static_cast<size_t>(element_count(dims)), value));
}

pb::HostArray download(const memory& array, const std::vector<int64_t>& shape) {
  std::vector<float> values(static_cast<size_t>(element_count(shape)));
  read_floats_to_host(array, values.data(), values.size());
  return pb::HostArray::from_floats(shape, values.data(), static_cast<int64_t>(values.size()));
}

memory converted(const memory& user, const memory::desc& desc) {
  memory result = allocate(desc);
  copy(user, result)();
  stream().wait();
  return result;
}

RenewableMemory::RenewableMemory(const memory::desc& desc)
    : desc_(desc),
      renewable_(true),
      storage_(allocate(desc)),
      handle_(desc, engine(), storage_.get_data_handle()) {}

RenewableMemory::RenewableMemory(const memory::desc& desc, const memory& storage)
    : desc_(desc), renewable_(false), storage_(storage), handle_(desc, engine(), storage.get_data_handle()) {
  if (desc.get_size() > storage.get_desc().get_size())
    throw std::logic_error("RenewableMemory: the storage given is smaller than the array");
}

memory RenewableMemory::view(const memory::desc& desc, int64_t offset) {
  memory array = onednn_backend::view(handle_, desc, offset);
  const auto bytes = static_cast<size_t>(static_cast<char*>(array.get_data_handle()) -
                                         static_cast<char*>(handle_.get_data_handle()));
  views_.emplace_back(array, bytes);
  return array;
}

void RenewableMemory::renew() {
  if (!renewable_) throw std::logic_error("RenewableMemory: renew() of an array over storage it does not own");
  storage_ = allocate(desc_);
  char* base = static_cast<char*>(storage_.get_data_handle());
  handle_.set_data_handle(base);
  for (auto& [array, bytes] : views_) array.set_data_handle(base + bytes);
}

}  // namespace pb::onednn_backend
