-- NO_LIMITS is what dequeue_room's callers use when T has no limits hash.
local NO_LIMITS = {conc = 0, rate = 0, keyconc = 0, keyrate = 0, per = 1000}
