//go:build linux

package child

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// childSysProcAttr makes the kernel SIGKILL the child when the parent dies,
// so a crashed or interrupted chaos run leaves no ordersync behind. (The
// signal follows the OS thread that started the child; the Go runtime does
// not retire threads of unlocked goroutines, so in practice it is the
// process.)
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// peakRSS reads VmHWM, the peak resident set size, from /proc/<pid>/status.
func peakRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("read peak RSS: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest) // "123456 kB"
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("read peak RSS: unexpected VmHWM line %q", sc.Text())
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("read peak RSS: %w", err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read peak RSS: %w", err)
	}
	return 0, fmt.Errorf("read peak RSS: no VmHWM in /proc/%d/status", pid)
}

// userHZ is the unit of the CPU times in /proc/<pid>/stat: 100 on every
// Linux architecture Go runs on (USER_HZ; sysconf(_SC_CLK_TCK) is fixed to
// it for /proc).
const userHZ = 100

// processCPU reads the CPU time, user and system, a process has used from
// /proc/<pid>/stat, to the 10 ms tick.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read CPU time: %w", err)
	}
	// The command name, in parentheses, may hold spaces: count fields after
	// its closing one. utime and stime are fields 14 and 15 of the line.
	end := strings.LastIndexByte(string(b), ')')
	var fields []string
	if end >= 0 {
		fields = strings.Fields(string(b[end+1:]))
	}
	if len(fields) < 13 {
		return 0, fmt.Errorf("read CPU time: unexpected /proc/%d/stat %q", pid, b)
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("read CPU time: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// listensOn reports whether process pid holds a socket listening on
// 127.0.0.1:port: its /proc/<pid>/net/tcp lists the loopback listeners of
// its network namespace with their inodes, and its /proc/<pid>/fd links
// name the sockets it holds.
func listensOn(pid, port int) (bool, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/tcp", pid))
	if err != nil {
		return false, fmt.Errorf("read listening sockets: %w", err)
	}
	local := fmt.Sprintf("0100007F:%04X", port) // 127.0.0.1 in host byte order, port in hex
	inodes := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		f := strings.Fields(line)
		if len(f) >= 10 && f[1] == local && f[3] == "0A" { // 0A: TCP_LISTEN
			inodes["socket:["+f[9]+"]"] = true
		}
	}
	if len(inodes) == 0 {
		return false, nil
	}
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false, fmt.Errorf("read open files: %w", err)
	}
	for _, fd := range fds {
		if target, err := os.Readlink(dir + "/" + fd.Name()); err == nil && inodes[target] {
			return true, nil
		}
	}
	return false, nil
}
