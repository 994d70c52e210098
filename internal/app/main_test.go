package app

import (
	"testing"

	"github.com/ordersync/ordersync/internal/leak"
	"github.com/ordersync/ordersync/internal/testenv/testdb"
)

func TestMain(m *testing.M) { leak.Main(m, testdb.Close) }
