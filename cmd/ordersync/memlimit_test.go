package main

import (
	"testing"
	"testing/fstest"
)

func TestServeMemoryLimit(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name       string
		gomemlimit string
		cgroup     int64
		want       int64
		ok         bool
	}{
		{name: "no container limit", want: defaultServeMemoryLimit, ok: true},
		{name: "the manifests' 256Mi", cgroup: 256 * mib, want: 192 * mib, ok: true},
		{name: "a large container", cgroup: 4096 * mib, want: 4032 * mib, ok: true},
		{name: "a small container keeps half", cgroup: 100 * mib, want: 50 * mib, ok: true},
		{name: "GOMEMLIMIT wins without a container limit", gomemlimit: "120MiB"},
		{name: "GOMEMLIMIT wins over the container's", gomemlimit: "off", cgroup: 256 * mib},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := func(k string) string {
				if k == "GOMEMLIMIT" {
					return tc.gomemlimit
				}
				return ""
			}
			got, ok := chooseServeMemoryLimit(env, tc.cgroup)
			if got != tc.want || ok != tc.ok {
				t.Errorf("chooseServeMemoryLimit = %d MiB, %v; want %d MiB, %v", got/mib, ok, tc.want/mib, tc.ok)
			}
		})
	}
}

func TestCgroupMemoryLimit(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	for _, tc := range []struct {
		name  string
		files fstest.MapFS
		want  int64
	}{
		{name: "v2, own cgroup path", want: 268435456, files: fstest.MapFS{
			"proc/self/cgroup":                          file("0::/kubepods/pod1/c1\n"),
			"sys/fs/cgroup/kubepods/pod1/c1/memory.max": file("268435456\n"),
		}},
		{name: "v2, namespaced at the mount's root", want: 134217728, files: fstest.MapFS{
			"proc/self/cgroup":         file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("134217728\n"),
		}},
		{name: "v2, no limit", want: 0, files: fstest.MapFS{
			"proc/self/cgroup":         file("0::/user.slice\n"),
			"sys/fs/cgroup/memory.max": file("max\n"),
		}},
		{name: "v1 limit", want: 536870912, files: fstest.MapFS{
			"proc/self/cgroup": file("4:memory:/docker/abc\n3:cpuset:/\n0::/\n"),
			"sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": file("536870912\n"),
		}},
		{name: "v1 unlimited", want: 0, files: fstest.MapFS{
			"proc/self/cgroup":                           file("4:memory:/\n"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes": file("9223372036854771712\n"),
		}},
		{name: "no cgroup file", want: 0, files: fstest.MapFS{}},
		{name: "unreadable value", want: 0, files: fstest.MapFS{
			"proc/self/cgroup":         file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("lots\n"),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cgroupMemoryLimit(tc.files); got != tc.want {
				t.Errorf("cgroupMemoryLimit = %d, want %d", got, tc.want)
			}
		})
	}
}
