package redact

import (
	"testing"

	"github.com/ordersync/ordersync/internal/leak"
)

func TestMain(m *testing.M) { leak.Main(m) }
