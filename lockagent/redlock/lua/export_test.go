package lua

// QueuePrelude is the wait queue's helpers (queue.lua), for the property tests that run
// them on a real master.
var QueuePrelude = code("queue.lua")
