/*
 * sse-fanout: the client of bench/fanout.py. Holds N Server-Sent Events streams open on one server, sends
 * one request that makes the server publish a message, and measures how long after that request each
 * stream had the message. The same client, with the same settings, measures the gateway and nchan.
 *
 *   sse-fanout PORT STREAM_PATH N TRIGGER_FILE MARKER [PID...]
 *
 * PORT          the server on 127.0.0.1; the streams come from 127.0.0.1, 127.0.0.2, ... (PER_ADDRESS from each),
 *               since one source address has fewer ports than the 50,000 streams that may be measured
 * STREAM_PATH   what each of the N streams GETs (Accept: text/event-stream)
 * TRIGGER_FILE  a whole HTTP/1.1 request, sent as it is on a connection of its own once all N streams
 *               have their response headers; the clock starts just before it is sent
 * MARKER        bytes the message carries and nothing before it does: a stream has the message once
 *               they have arrived on it
 * PID...        processes whose resident memory (VmRSS, summed) is read before the streams open, once
 *               they are all open, and after the message reached them
 *
 * Prints one line of JSON: the streams opened, how many got the message, the time to the first, the
 * median, the 99th percentile and the last in milliseconds, and the memory readings in kB.
 * Exit status 1 when a stream could not be opened or the message did not reach every stream in 60 s.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { TAIL = 128, BATCH = 250, PER_ADDRESS = 10000 };

struct stream {
    int fd;
    size_t seen;         /* bytes read so far */
    int has_headers;     /* the response's status line and headers have arrived */
    int has_message;     /* the marker has arrived */
    double at;           /* seconds after the trigger when it did */
    size_t kept;         /* bytes of `tail` in use */
    char tail[TAIL * 2]; /* the last bytes read, so a marker or header end split across reads is found */
};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void die(const char *what) {
    perror(what);
    exit(2);
}

static long rss_kb(int count, char **pids) {
    long total = 0;
    for (int i = 0; i < count; i++) {
        char path[64], line[256];
        snprintf(path, sizeof path, "/proc/%s/status", pids[i]);
        FILE *file = fopen(path, "r");
        if (!file) continue;
        while (fgets(line, sizeof line, file))
            if (strncmp(line, "VmRSS:", 6) == 0) total += strtol(line + 6, NULL, 10);
        fclose(file);
    }
    return total;
}

/* The connection of stream `i` (the trigger's is 0's), from the loopback address that stream's share of
 * PER_ADDRESS falls on. The port is chosen at connect, per destination, not at bind: else each address
 * would have only as many as one bind can take. */
static int open_connection(int port, int i) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) die("socket");
    int one = 1;
    setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    struct sockaddr_in source = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK + i / PER_ADDRESS)};
    if (bind(fd, (struct sockaddr *)&source, sizeof source) != 0) die("bind");
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) die("connect");
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static void send_all(int fd, const char *bytes, size_t length) {
    while (length > 0) {
        ssize_t sent = send(fd, bytes, length, 0);
        if (sent < 0) die("send");
        bytes += sent;
        length -= sent;
    }
}

/* Reads what `s` has; notes its headers and the marker, looking across the boundary of reads. */
static void read_stream(struct stream *s, const char *marker, double started) {
    char buffer[16384];
    for (;;) {
        ssize_t count = recv(s->fd, buffer, sizeof buffer, 0);
        if (count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        if (count <= 0) {
            fprintf(stderr, "a stream was closed by the server\n");
            exit(1);
        }
        if (s->seen == 0 && (count < 12 || strncmp(buffer, "HTTP/1.1 200", 12) != 0)) {
            fprintf(stderr, "a stream was refused: %.*s\n", (int)(count < 200 ? count : 200), buffer);
            exit(1);
        }
        s->seen += (size_t)count;
        size_t offset = 0;
        while (offset < (size_t)count) {
            size_t room = sizeof s->tail - s->kept, take = (size_t)count - offset < room ? (size_t)count - offset : room;
            memcpy(s->tail + s->kept, buffer + offset, take);
            s->kept += take;
            offset += take;
            if (!s->has_headers && memmem(s->tail, s->kept, "\r\n\r\n", 4)) s->has_headers = 1;
            if (started > 0 && !s->has_message && memmem(s->tail, s->kept, marker, strlen(marker))) {
                s->has_message = 1;
                s->at = now() - started;
            }
            if (s->kept > TAIL) { /* keep the last TAIL bytes */
                memmove(s->tail, s->tail + s->kept - TAIL, TAIL);
                s->kept = TAIL;
            }
        }
    }
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: sse-fanout PORT STREAM_PATH N TRIGGER_FILE MARKER [PID...]\n");
        return 2;
    }
    int port = atoi(argv[1]), n = atoi(argv[3]);
    const char *path = argv[2], *marker = argv[5];
    if (strlen(marker) >= TAIL) { fprintf(stderr, "the marker is too long\n"); return 2; }
    int pid_count = argc - 6;
    char **pids = argv + 6;

    FILE *file = fopen(argv[4], "rb");
    if (!file) die(argv[4]);
    char trigger[65536];
    size_t trigger_length = fread(trigger, 1, sizeof trigger, file);
    fclose(file);

    char request[512];
    int request_length = snprintf(request, sizeof request,
                                  "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept: text/event-stream\r\n\r\n", path, port);
    long rss_before = rss_kb(pid_count, pids);

    struct stream *streams = calloc(n, sizeof *streams);
    int poll = epoll_create1(0);
    struct epoll_event events[1024];
    /* Opened in batches, each waited for, so the server's accept queue never overflows (a dropped SYN
     * would cost a second) and every stream is in place before the clock starts. */
    for (int opened = 0; opened < n;) {
        int batch_end = opened + BATCH < n ? opened + BATCH : n;
        for (int i = opened; i < batch_end; i++) {
            streams[i].fd = open_connection(port, i);
            send_all(streams[i].fd, request, request_length);
            fcntl(streams[i].fd, F_SETFL, O_NONBLOCK);
            struct epoll_event event = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
            if (epoll_ctl(poll, EPOLL_CTL_ADD, streams[i].fd, &event) != 0) die("epoll_ctl");
        }
        double deadline = now() + 30;
        for (int waiting = 1; waiting;) {
            int ready = epoll_wait(poll, events, 1024, 1000);
            for (int e = 0; e < ready; e++) read_stream(&streams[events[e].data.u32], marker, 0);
            waiting = 0;
            for (int i = opened; i < batch_end; i++) waiting |= !streams[i].has_headers;
            if (waiting && now() > deadline) {
                fprintf(stderr, "streams %d to %d did not all get their headers within 30 s\n", opened, batch_end);
                return 1;
            }
        }
        opened = batch_end;
    }
    usleep(n > 10000 ? 1000 * 1000 : 200 * 1000); /* let the server settle what opening the streams set in motion */
    long rss_open = rss_kb(pid_count, pids);

    int trigger_fd = open_connection(port, 0);
    double started = now();
    send_all(trigger_fd, trigger, trigger_length);
    int received = 0;
    double deadline = started + 60;
    while (received < n && now() < deadline) {
        int ready = epoll_wait(poll, events, 1024, 1000);
        for (int e = 0; e < ready; e++) {
            struct stream *s = &streams[events[e].data.u32];
            int had = s->has_message;
            read_stream(s, marker, started);
            received += s->has_message && !had;
        }
    }
    long rss_after = rss_kb(pid_count, pids);

    double *times = malloc(n * sizeof *times);
    int count = 0;
    for (int i = 0; i < n; i++)
        if (streams[i].has_message) times[count++] = streams[i].at * 1000;
    qsort(times, count, sizeof *times, compare);
    printf("{\"streams\": %d, \"received\": %d, \"first_ms\": %.2f, \"p50_ms\": %.2f, \"p99_ms\": %.2f, \"last_ms\": %.2f, "
           "\"rss_before_kb\": %ld, \"rss_open_kb\": %ld, \"rss_after_kb\": %ld}\n",
           n, count, count ? times[0] : -1, count ? times[count / 2] : -1, count ? times[(int)(count * 0.99)] : -1,
           count ? times[count - 1] : -1, rss_before, rss_open, rss_after);
    for (int i = 0; i < n; i++) close(streams[i].fd);
    close(trigger_fd);
    return count == n ? 0 : 1;
}
