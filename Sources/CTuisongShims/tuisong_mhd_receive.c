// Seeing the bytes libmicrohttpd receives, before it parses them.
//
// libmicrohttpd 0.9.75 (Debian 12) decodes a chunked request body itself and hands the access
// handler only the chunks' data: the size lines and their line ends never reach Tuisong, and
// the library accepts a bare LF where RFC 9112 §7.1 wants CRLF ("TODO: Add an option to disallow
// bare LF" in its source). To refuse that, TuisongHTTP must read the framing as it arrives.
//
// libmicrohttpd reads a connection through exactly two imported functions: recv (plain TCP) and
// gnutls_record_recv (TLS, already decrypted). This file points those two entries of
// libmicrohttpd's own global offset table at wrappers that call the real function and then hand
// what was read to an observer. Only libmicrohttpd's table is changed: every other library
// (libcurl, libpq, OpenSSL, gnutls itself) still calls libc directly, and a descriptor no
// connection watches costs one array load.
#define _GNU_SOURCE
#include "tuisong_mhd.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

typedef ssize_t (*receive_function)(int, void *, size_t, int);
typedef ssize_t (*tls_receive_function)(void *, void *, size_t);
typedef int (*tls_socket_function)(void *);

static receive_function real_recv;
static tls_receive_function real_tls_recv;
static tls_socket_function tls_socket_of;
static tuisong_mhd_receive_observer observer;

/// One slot per descriptor number below the process's open-file limit: the watching context,
/// or NULL. Written by the thread that opens or closes the connection, read by the one that
/// receives on it (the same libmicrohttpd worker), so relaxed ordering suffices; acquire and
/// release keep it correct even if that ever changes.
static _Atomic(void *) *watched;
static size_t watched_count;
static int install_result = -1;
static int tls_observed = 0;

static void notify(int socket, const void *bytes, ssize_t count) {
    if (count <= 0 || socket < 0 || (size_t)socket >= watched_count) return;
    void *context = atomic_load_explicit(&watched[socket], memory_order_acquire);
    if (context != NULL) observer(context, (const uint8_t *)bytes, (size_t)count);
}

static ssize_t observed_recv(int socket, void *buffer, size_t length, int flags) {
    ssize_t count = real_recv(socket, buffer, length, flags);
    int saved = errno;
    notify(socket, buffer, count);
    errno = saved;
    return count;
}

static ssize_t observed_tls_recv(void *session, void *buffer, size_t length) {
    ssize_t count = real_tls_recv(session, buffer, length);
    if (count > 0 && tls_socket_of != NULL) {
        int saved = errno;
        notify(tls_socket_of(session), buffer, count);
        errno = saved;
    }
    return count;
}

struct table_patch {
    const char *name;
    void *replacement;
    int patched;
};

#if defined(__x86_64__)
#define JUMP_SLOT R_X86_64_JUMP_SLOT
#define GLOBAL_DATA R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define JUMP_SLOT R_AARCH64_JUMP_SLOT
#define GLOBAL_DATA R_AARCH64_GLOB_DAT
#else
#define JUMP_SLOT 0
#define GLOBAL_DATA 0
#define NO_TABLE_PATCHING 1
#endif

struct table_patches {
    struct table_patch entries[2];
    size_t count;
};

/// Points every slot in `relocations` that names one of `patches` at its replacement. The table
/// sits in the read-only-after-relocation segment (full RELRO), so its page is made writable
/// for the store and read-only again after.
static void patch_slots(ElfW(Addr) base, const ElfW(Rela) *relocations, size_t count,
                        const ElfW(Sym) *symbols, const char *names, const ElfW(Phdr) *relro,
                        struct table_patch *patches, size_t patch_count) {
    long page = sysconf(_SC_PAGESIZE);
    for (size_t index = 0; index < count; index++) {
        unsigned long type = ELF64_R_TYPE(relocations[index].r_info);
        if (type != JUMP_SLOT && type != GLOBAL_DATA) continue;
        const char *name = names + symbols[ELF64_R_SYM(relocations[index].r_info)].st_name;
        for (size_t which = 0; which < patch_count; which++) {
            if (strcmp(name, patches[which].name) != 0) continue;
            void **slot = (void **)(base + relocations[index].r_offset);
            uintptr_t start = (uintptr_t)slot & ~(uintptr_t)(page - 1);
            if (mprotect((void *)start, (size_t)page, PROT_READ | PROT_WRITE) != 0) break;
            atomic_store_explicit((_Atomic(void *) *)slot, patches[which].replacement,
                                  memory_order_release);
            int read_only_after = relro != NULL && (ElfW(Addr))slot >= base + relro->p_vaddr &&
                                  (ElfW(Addr))slot < base + relro->p_vaddr + relro->p_memsz;
            if (read_only_after) mprotect((void *)start, (size_t)page, PROT_READ);
            patches[which].patched = 1;
            break;
        }
    }
}

/// glibc stores most dynamic-section addresses already relocated; other loaders leave them
/// relative to the library's base.
static ElfW(Addr) absolute(ElfW(Addr) base, ElfW(Addr) address) {
    return address < base ? base + address : address;
}

static int patch_libmicrohttpd(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    if (info->dlpi_name == NULL || strstr(info->dlpi_name, "libmicrohttpd.so") == NULL) return 0;
    const ElfW(Dyn) *dynamic = NULL;
    const ElfW(Phdr) *relro = NULL;
    for (int index = 0; index < info->dlpi_phnum; index++) {
        if (info->dlpi_phdr[index].p_type == PT_DYNAMIC)
            dynamic = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[index].p_vaddr);
        if (info->dlpi_phdr[index].p_type == PT_GNU_RELRO) relro = &info->dlpi_phdr[index];
    }
    if (dynamic == NULL) return 1;
    ElfW(Addr) base = info->dlpi_addr;
    const ElfW(Sym) *symbols = NULL;
    const char *names = NULL;
    const ElfW(Rela) *plt = NULL, *other = NULL;
    size_t plt_size = 0, other_size = 0;
    for (const ElfW(Dyn) *entry = dynamic; entry->d_tag != DT_NULL; entry++) {
        switch (entry->d_tag) {
        case DT_SYMTAB: symbols = (const ElfW(Sym) *)absolute(base, entry->d_un.d_ptr); break;
        case DT_STRTAB: names = (const char *)absolute(base, entry->d_un.d_ptr); break;
        case DT_JMPREL: plt = (const ElfW(Rela) *)absolute(base, entry->d_un.d_ptr); break;
        case DT_PLTRELSZ: plt_size = entry->d_un.d_val; break;
        case DT_RELA: other = (const ElfW(Rela) *)absolute(base, entry->d_un.d_ptr); break;
        case DT_RELASZ: other_size = entry->d_un.d_val; break;
        default: break;
        }
    }
    if (symbols == NULL || names == NULL) return 1;
    struct table_patches *patches = data;
    if (plt != NULL)
        patch_slots(base, plt, plt_size / sizeof(ElfW(Rela)), symbols, names, relro,
                    patches->entries, patches->count);
    if (other != NULL)
        patch_slots(base, other, other_size / sizeof(ElfW(Rela)), symbols, names, relro,
                    patches->entries, patches->count);
    return 1;
}

static void install(void) {
#if defined(NO_TABLE_PATCHING)
    return;
#endif
    real_recv = (receive_function)dlsym(RTLD_DEFAULT, "recv");
    real_tls_recv = (tls_receive_function)dlsym(RTLD_DEFAULT, "gnutls_record_recv");
    tls_socket_of = (tls_socket_function)dlsym(RTLD_DEFAULT, "gnutls_transport_get_int");
    if (real_recv == NULL) return;
    struct rlimit limit;
    size_t count = 65536;
    // The hard limit: the soft one may still be raised after this.
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0)
        count = limit.rlim_max == RLIM_INFINITY ? (1u << 20) : (size_t)limit.rlim_max;
    if (count > (1u << 20)) count = 1u << 20;
    if (count < 1024) count = 1024;
    // calloc of this size is fresh zeroed pages from the kernel: only slots in use cost memory.
    watched = calloc(count, sizeof(*watched));
    if (watched == NULL) return;
    watched_count = count;
    struct table_patches patches = {
        .entries = {{"recv", (void *)observed_recv, 0},
                    {"gnutls_record_recv", (void *)observed_tls_recv, 0}},
        // Without gnutls (or its descriptor lookup) TLS connections are read unobserved.
        .count = (real_tls_recv != NULL && tls_socket_of != NULL) ? 2 : 1,
    };
    dl_iterate_phdr(patch_libmicrohttpd, &patches);
    install_result = patches.entries[0].patched ? 0 : -1;
    tls_observed = patches.count == 2 && patches.entries[1].patched;
}

int tuisong_mhd_observe_receives(tuisong_mhd_receive_observer receive) {
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static int attempted = 0;
    pthread_mutex_lock(&lock);
    // The observer is set before the table points at the wrappers and never changes after.
    if (!attempted) {
        attempted = 1;
        observer = receive;
        install();
    }
    int result = observer == receive ? install_result : -1;
    pthread_mutex_unlock(&lock);
    return result;
}

int tuisong_mhd_watch_socket(int socket, void *context) {
    if (install_result != 0 || socket < 0 || (size_t)socket >= watched_count) return -1;
    atomic_store_explicit(&watched[socket], context, memory_order_release);
    return 0;
}

int tuisong_mhd_observes_tls(void) { return install_result == 0 && tls_observed; }
