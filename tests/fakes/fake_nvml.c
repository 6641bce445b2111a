// A fake NVML (libnvidia-ml.so.1): the calls pyhipbench's environment and
// energy readings make, with the real ABI (nvml.h's signatures, return codes
// and struct layouts), for one device at PCI bus id 0000:01:00.0. Tests load
// it through PYHIPBENCH_NVML_LIBRARY and steer it with the fake_nvml_* calls.
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

typedef int nvmlReturn_t;
typedef void* nvmlDevice_t;
enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7
};
typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;

static int initialised;
static int init_calls;
static int fail_init;
static char unsupported[512];  // names of the calls that answer NOT_SUPPORTED, comma separated
static unsigned temperature_c = 35;
static unsigned long long energy_mj = 1000000;
// The GPU's power and how often the driver samples it: the counter steps by
// power x period at each period, as a real one steps when the power is sampled.
static unsigned long long power_mw;
static unsigned long long period_us = 20000;
static double power_since_us;
static int device_token;  // the one device's handle points here

void fake_nvml_reset(void) {
  initialised = init_calls = fail_init = 0;
  unsupported[0] = 0;
  temperature_c = 35;
  energy_mj = 1000000;
  power_mw = 0;
  period_us = 20000;
}
void fake_nvml_fail_init(int fail) { fail_init = fail; }
void fake_nvml_unsupported(const char* names) { snprintf(unsupported, sizeof unsupported, "%s", names); }
void fake_nvml_set_temperature(unsigned celsius) { temperature_c = celsius; }
static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
void fake_nvml_set_power(unsigned long long milliwatts, unsigned long long sample_period_us) {
  power_mw = milliwatts;
  period_us = sample_period_us;
  power_since_us = now_us();
}
int fake_nvml_init_calls(void) { return init_calls; }

static int is_unsupported(const char* name) {
  char list[sizeof unsupported + 2];
  char needle[128];
  snprintf(list, sizeof list, ",%s,", unsupported);
  snprintf(needle, sizeof needle, ",%s,", name);
  return strstr(list, needle) != NULL;
}

#define GUARD(name)                                                \
  if (!initialised) return NVML_ERROR_UNINITIALIZED;               \
  if (device != &device_token) return NVML_ERROR_INVALID_ARGUMENT; \
  if (is_unsupported(name)) return NVML_ERROR_NOT_SUPPORTED;

nvmlReturn_t nvmlInit_v2(void) {
  ++init_calls;
  if (fail_init) return 9;  // NVML_ERROR_DRIVER_NOT_LOADED
  initialised = 1;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlShutdown(void) {
  initialised = 0;
  return NVML_SUCCESS;
}
const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case 9:
      return "Driver Not Loaded";
    default:
      return "Unknown Error";
  }
}
nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned length) {
  if (!initialised) return NVML_ERROR_UNINITIALIZED;
  if (length < 14) return NVML_ERROR_INSUFFICIENT_SIZE;
  strcpy(version, "999.12.34");
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, nvmlDevice_t* device) {
  if (!initialised) return NVML_ERROR_UNINITIALIZED;
  if (strcasecmp(bus_id, "0000:01:00.0") != 0) return NVML_ERROR_NOT_FOUND;
  *device = &device_token;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned length) {
  GUARD("nvmlDeviceGetName");
  snprintf(name, length, "Fake GPU");
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned length) {
  GUARD("nvmlDeviceGetUUID");
  snprintf(uuid, length, "GPU-00000000-1111-2222-3333-444444444444");
  return NVML_SUCCESS;
}
// Clock types: 0 graphics, 1 SM, 2 memory.
nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, int type, unsigned* mhz) {
  GUARD("nvmlDeviceGetMaxClockInfo");
  *mhz = type == 2 ? 3201 : 1980;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetDefaultApplicationsClock(nvmlDevice_t device, int type, unsigned* mhz) {
  GUARD("nvmlDeviceGetDefaultApplicationsClock");
  *mhz = type == 2 ? 3201 : 1755;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  GUARD("nvmlDeviceGetMemoryInfo");
  memory->total = 150754820096ULL;
  memory->used = 1ULL << 30;
  memory->free = memory->total - memory->used;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, int* current, int* pending) {
  GUARD("nvmlDeviceGetEccMode");
  *current = *pending = 1;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, int* mode) {
  GUARD("nvmlDeviceGetPersistenceMode");
  *mode = 0;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device, unsigned* milliwatts) {
  GUARD("nvmlDeviceGetPowerManagementLimit");
  *milliwatts = 700000;
  return NVML_SUCCESS;
}
// Sensor 0: the GPU.
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensor, unsigned* celsius) {
  GUARD("nvmlDeviceGetTemperature");
  if (sensor != 0) return NVML_ERROR_INVALID_ARGUMENT;
  *celsius = temperature_c;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long* millijoules) {
  GUARD("nvmlDeviceGetTotalEnergyConsumption");
  const unsigned long long periods = (unsigned long long)((now_us() - power_since_us) / period_us);
  *millijoules = energy_mj + power_mw * periods * period_us / 1000000ULL;
  return NVML_SUCCESS;
}
