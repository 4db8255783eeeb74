package host

import "sync"

// ForEach calls f(0) to f(n-1), at most workers at a time, and returns
// when every call has. With workers or n at most 1 it calls them in
// order on the caller's goroutine. f must be safe to call concurrently
// for different indexes; which index runs first is not defined.
func ForEach(workers, n int, f func(i int)) {
	if workers <= 1 || n <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}
