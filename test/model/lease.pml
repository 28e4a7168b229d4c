/*
 * Baton's lease protocol (claim, heartbeat, outcome, expiry), checked exhaustively by Spin.
 * Workers claim a pending job (fresh token = previous + 1), heartbeat, then
 * write the outcome (success, or a transient failure that makes the job
 * pending again), or crash at any point. A reaper may expire any live
 * lease at any moment (it cannot know whether the holder is paused).
 * Invariant (no stale write): an outcome is accepted only under the job's current token,
 * and at most once per job. Build with -DUNFENCED to drop the token condition
 * from the outcome write: Spin must then find a counterexample.
 *
 *   spin -a [-DNJOBS=2 -DNWORKERS=2 -DMAXTOK=3] [-DUNFENCED] lease.pml
 *   cc -O2 -DSAFETY -o pan pan.c && ./pan -E
 */

#ifndef NJOBS
#define NJOBS 2
#endif
#ifndef NWORKERS
#define NWORKERS 2
#endif
#ifndef MAXTOK
#define MAXTOK 3
#endif

#define PENDING 0
#define RUNNING 1
#define DONE    2
#define NOBODY  255

byte state[NJOBS];
byte token[NJOBS];       /* last token issued for the job (0: never claimed) */
byte owner[NJOBS];
byte accepted[NJOBS];    /* outcomes the store accepted */
byte acceptedTok[NJOBS];

#ifdef UNFENCED
#define OWNS(j, t) (state[j] == RUNNING)
#else
#define OWNS(j, t) (state[j] == RUNNING && token[j] == t)
#endif

proctype Worker(byte w) {
  byte j;
  byte t;   /* token this worker believes it holds; 0 = none */
  do
  :: atomic {
       /* claim: one statement, token+1, only pending rows */
       select (j : 0 .. NJOBS - 1);
       if
       :: state[j] == PENDING && token[j] < MAXTOK ->
            token[j] = token[j] + 1; t = token[j]; state[j] = RUNNING; owner[j] = w
       :: !(state[j] == PENDING && token[j] < MAXTOK) -> t = 0
       fi
     }
     if
     :: t == 0 -> skip
     :: t != 0 ->
        do
        :: atomic {
             /* heartbeat: fenced; a row missing from RETURNING means the lease is lost */
             if
             :: state[j] == RUNNING && token[j] == t -> skip
             :: !(state[j] == RUNNING && token[j] == t) -> t = 0
             fi
           }
           if
           :: t == 0 -> break
           :: t != 0 -> skip
           fi
        :: atomic {
             /* outcome write: UPDATE ... WHERE id = j AND lease_token = t AND state live */
             if
             :: OWNS(j, t) ->
                  assert(token[j] == t);
                  if
                  :: assert(accepted[j] == 0);   /* success: at most one per job */
                     state[j] = DONE; accepted[j] = accepted[j] + 1; acceptedTok[j] = t
                  :: state[j] = PENDING          /* transient failure: retried later */
                  fi;
                  owner[j] = NOBODY
             :: !OWNS(j, t) -> skip   /* fenced off: 0 rows */
             fi;
             t = 0
           }
           break
        :: t = 0; break        /* crash (kill -9): the lease stays until the reaper */
        od
     fi
  od
}

active proctype Reaper() {
  byte j;
  do
  :: atomic {
       select (j : 0 .. NJOBS - 1);
       if
       :: state[j] == RUNNING -> state[j] = PENDING; owner[j] = NOBODY
       :: state[j] != RUNNING -> skip
       fi
     }
  od
}

init {
  byte i;
  atomic {
    for (i : 0 .. NJOBS - 1) { owner[i] = NOBODY }
    for (i : 0 .. NWORKERS - 1) { run Worker(i) }
  }
}
