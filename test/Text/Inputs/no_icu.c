/* Stands in for a machine without ICU: preloaded (LD_PRELOAD) into
   lockstep-run by icu-missing.test, it makes every dlopen of a libicuuc fail
   the way glibc's does when the file is not installed; every other dlopen
   goes through. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static __thread char message[512];
static __thread int pending;

void *dlopen(const char *file, int mode) {
  if (file && strstr(file, "libicuuc")) {
    snprintf(message, sizeof message,
             "%s: cannot open shared object file: No such file or directory", file);
    pending = 1;
    return NULL;
  }
  void *(*real)(const char *, int) = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
  return real(file, mode);
}

char *dlerror(void) {
  if (pending) {
    pending = 0;
    return message;
  }
  char *(*real)(void) = (char *(*)(void))dlsym(RTLD_NEXT, "dlerror");
  return real();
}
