// dlopen_check LIBRARY: loads LIBRARY with RTLD_NOW, as a Python extension is
// loaded, and prints "ok" or the loader's own error. The tests compare our
// resolver's verdicts with this real loader, case by case.
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: dlopen_check LIBRARY\n");
    return 2;
  }
  void* handle = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    printf("%s\n", dlerror());
    return 1;
  }
  printf("ok\n");
  return 0;
}
