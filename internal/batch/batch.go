// Package batch groups what arrives on a channel into batches.
package batch

// Drain calls handle with what ch holds, in batches of at most max: each
// batch starts with the next value to arrive and takes whatever else is
// already waiting, without waiting for more. It returns when ch is closed
// and empty. handle must not keep the slice: it is reused.
func Drain[T any](ch <-chan T, max int, handle func([]T)) {
	batch := make([]T, 0, max)
	for v := range ch {
		batch = append(batch[:0], v)
	gather:
		for len(batch) < max {
			select {
			case v, ok := <-ch:
				if !ok {
					break gather
				}
				batch = append(batch, v)
			default:
				break gather
			}
		}
		handle(batch)
	}
}
