/* A fake ROCm libhiprtc.so: the calls pyhipbench.source makes through hip-python's hip.hiprtc.
 *
 * It compiles nothing. A program "compiles" to the code object in the file
 * FAKE_HIPRTC_CODE_OBJECT (a real HSACO the test built), unless its source
 * holds "#error", which fails the compile with a log in hiprtc's format
 * naming the program and the line. "#warning" adds a warning to the log of a
 * compile that succeeds. An --offload-arch= option is required. A name
 * expression that is a plain identifier (an extern "C" kernel) lowers to
 * itself; any other has each character outside [A-Za-z0-9_] replaced by '_'
 * and "_Z" put before it, standing in for the C++ mangling. An option it does
 * not know (known: --offload-arch=, -D, -U, -I, -std=, -O, -g, -w, -W, -ffast-math,
 * -fgpu-rdc, -fno-*, -mcumode, -mno-*)
 * fails the compile as ROCm's hiprtc does, its clang driver refusing it:
 * HIPRTC_ERROR_COMPILATION with "error: unknown argument: '-foo'" in the log.
 *
 * fake_hiprtc_options() returns the last compile's options, one per line;
 * fake_hiprtc_live_programs() the programs not yet destroyed.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* hiprtcResult values (from hip-python's hiprtcResult enum). */
enum {
  HIPRTC_SUCCESS = 0,
  HIPRTC_ERROR_INVALID_INPUT = 3,
  HIPRTC_ERROR_INVALID_PROGRAM = 4,
  HIPRTC_ERROR_INVALID_OPTION = 5,
  HIPRTC_ERROR_COMPILATION = 6,
  HIPRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION = 9,
  HIPRTC_ERROR_NAME_EXPRESSION_NOT_VALID = 10,
};

#define MAX_NAMES 16

typedef struct {
  char* source;
  char* name;
  char* expressions[MAX_NAMES];
  char* lowered[MAX_NAMES];
  int expression_count;
  int compiled;
  char log[1024];
  char* code;
  size_t code_bytes;
} program;

static int live_programs;
static char last_options[4096];

int fake_hiprtc_live_programs(void) { return live_programs; }
const char* fake_hiprtc_options(void) { return last_options; }

const char* hiprtcGetErrorString(int result) {
  switch (result) {
    case HIPRTC_SUCCESS:
      return "HIPRTC_SUCCESS";
    case HIPRTC_ERROR_INVALID_INPUT:
      return "HIPRTC_ERROR_INVALID_INPUT";
    case HIPRTC_ERROR_INVALID_PROGRAM:
      return "HIPRTC_ERROR_INVALID_PROGRAM";
    case HIPRTC_ERROR_INVALID_OPTION:
      return "HIPRTC_ERROR_INVALID_OPTION";
    case HIPRTC_ERROR_COMPILATION:
      return "HIPRTC_ERROR_COMPILATION";
    case HIPRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION:
      return "HIPRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION";
    case HIPRTC_ERROR_NAME_EXPRESSION_NOT_VALID:
      return "HIPRTC_ERROR_NAME_EXPRESSION_NOT_VALID";
    default:
      return "Invalid HIPRTC error code";
  }
}

int hiprtcVersion(int* major, int* minor) {
  if (!major || !minor) return HIPRTC_ERROR_INVALID_INPUT;
  *major = 7;
  *minor = 2;
  return HIPRTC_SUCCESS;
}

int hiprtcCreateProgram(program** out, const char* source, const char* name, int header_count, const char** headers,
                        const char** include_names) {
  (void)headers, (void)include_names;
  if (!out || !source || header_count < 0) return HIPRTC_ERROR_INVALID_INPUT;
  program* p = calloc(1, sizeof *p);
  p->source = strdup(source);
  p->name = strdup(name ? name : "default_program");
  *out = p;
  ++live_programs;
  return HIPRTC_SUCCESS;
}

int hiprtcAddNameExpression(program* p, const char* expression) {
  if (!p || !expression || p->expression_count == MAX_NAMES) return HIPRTC_ERROR_INVALID_INPUT;
  if (p->compiled) return HIPRTC_ERROR_INVALID_PROGRAM;
  p->expressions[p->expression_count++] = strdup(expression);
  return HIPRTC_SUCCESS;
}

static char* lower(const char* expression) {
  int identifier = isalpha((unsigned char)expression[0]) || expression[0] == '_';
  for (const char* c = expression; *c && identifier; ++c) identifier = isalnum((unsigned char)*c) || *c == '_';
  if (identifier) return strdup(expression);
  char* lowered = malloc(strlen(expression) + 3);
  strcpy(lowered, "_Z");
  for (const char* c = expression; *c; ++c)
    lowered[2 + (c - expression)] = isalnum((unsigned char)*c) || *c == '_' ? *c : '_';
  lowered[2 + strlen(expression)] = '\0';
  return lowered;
}

/* Whether the fake's clang driver knows `option`. */
static int known_option(const char* option) {
  static const char* prefixes[] = {"--offload-arch=", "-D",        "-U",    "-I",       "-std=", "-O", "-g", "-w", "-W",
                                   "-ffast-math",     "-fgpu-rdc", "-fno-", "-mcumode", "-mno-"};
  for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; ++i)
    if (strncmp(option, prefixes[i], strlen(prefixes[i])) == 0) return 1;
  return 0;
}

/* The 1-based line of `at` in `source`. */
static int line_of(const char* source, const char* at) {
  int line = 1;
  for (const char* c = source; c < at; ++c) line += *c == '\n';
  return line;
}

int hiprtcCompileProgram(program* p, int option_count, const char** options) {
  if (!p || option_count < 0) return HIPRTC_ERROR_INVALID_INPUT;
  last_options[0] = '\0';
  int has_arch = 0;
  for (int i = 0; i < option_count; ++i) {
    strncat(last_options, options[i], sizeof last_options - strlen(last_options) - 2);
    strcat(last_options, "\n");
    has_arch |= strncmp(options[i], "--offload-arch=", 15) == 0;
  }
  if (!has_arch) return HIPRTC_ERROR_INVALID_OPTION;
  for (int i = 0; i < option_count; ++i) {
    if (!known_option(options[i])) {
      snprintf(p->log, sizeof p->log, "error: unknown argument: '%s'\n", options[i]);
      return HIPRTC_ERROR_COMPILATION;
    }
  }
  const char* error = strstr(p->source, "#error");
  if (error) {
    const char* end = strchr(error, '\n');
    int length = end ? (int)(end - error - 7) : (int)strlen(error + 7);
    snprintf(p->log, sizeof p->log, "%s:%d:2: error: %.*s\n1 error generated.\n", p->name, line_of(p->source, error),
             length > 0 ? length : 0, error + 7);
    return HIPRTC_ERROR_COMPILATION;
  }
  const char* warning = strstr(p->source, "#warning");
  if (warning)
    snprintf(p->log, sizeof p->log, "%s:%d:2: warning: a warning [-W#warnings]\n", p->name,
             line_of(p->source, warning));
  const char* path = getenv("FAKE_HIPRTC_CODE_OBJECT");
  FILE* file = path ? fopen(path, "rb") : NULL;
  if (!file) return HIPRTC_ERROR_COMPILATION;
  fseek(file, 0, SEEK_END);
  p->code_bytes = (size_t)ftell(file);
  fseek(file, 0, SEEK_SET);
  p->code = malloc(p->code_bytes);
  size_t read = fread(p->code, 1, p->code_bytes, file);
  fclose(file);
  if (read != p->code_bytes) return HIPRTC_ERROR_COMPILATION;
  for (int i = 0; i < p->expression_count; ++i) p->lowered[i] = lower(p->expressions[i]);
  p->compiled = 1;
  return HIPRTC_SUCCESS;
}

int hiprtcGetProgramLogSize(program* p, size_t* size) {
  if (!p || !size) return HIPRTC_ERROR_INVALID_INPUT;
  *size = strlen(p->log) + 1;
  return HIPRTC_SUCCESS;
}

int hiprtcGetProgramLog(program* p, char* log) {
  if (!p || !log) return HIPRTC_ERROR_INVALID_INPUT;
  strcpy(log, p->log);
  return HIPRTC_SUCCESS;
}

int hiprtcGetCodeSize(program* p, size_t* size) {
  if (!p || !size) return HIPRTC_ERROR_INVALID_INPUT;
  if (!p->compiled) return HIPRTC_ERROR_INVALID_PROGRAM;
  *size = p->code_bytes;
  return HIPRTC_SUCCESS;
}

int hiprtcGetCode(program* p, char* code) {
  if (!p || !code) return HIPRTC_ERROR_INVALID_INPUT;
  if (!p->compiled) return HIPRTC_ERROR_INVALID_PROGRAM;
  memcpy(code, p->code, p->code_bytes);
  return HIPRTC_SUCCESS;
}

int hiprtcGetLoweredName(program* p, const char* expression, const char** lowered) {
  if (!p || !expression || !lowered) return HIPRTC_ERROR_INVALID_INPUT;
  if (!p->compiled) return HIPRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION;
  for (int i = 0; i < p->expression_count; ++i)
    if (strcmp(p->expressions[i], expression) == 0) {
      *lowered = p->lowered[i];
      return HIPRTC_SUCCESS;
    }
  return HIPRTC_ERROR_NAME_EXPRESSION_NOT_VALID;
}

int hiprtcDestroyProgram(program** handle) {
  if (!handle || !*handle) return HIPRTC_ERROR_INVALID_INPUT;
  program* p = *handle;
  for (int i = 0; i < p->expression_count; ++i) {
    free(p->expressions[i]);
    free(p->lowered[i]);
  }
  free(p->source);
  free(p->name);
  free(p->code);
  free(p);
  *handle = NULL;
  --live_programs;
  return HIPRTC_SUCCESS;
}
