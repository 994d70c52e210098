//go:build !unix

package datadir

import "errors"

func statfs(string) (Usage, error) {
	return Usage{}, errors.New("free disk space is not read on this system")
}
