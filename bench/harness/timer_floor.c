/* The machine's own timer wake-up delay: a thread that sleeps on a CLOCK_MONOTONIC timerfd
 * until absolute due times PERIOD apart (as volley's workers wait for their arrivals, engine
 * src/alarm.rs) and reads the clock on waking. Prints the delay's p50, p99, p99.9 and max:
 * the floor under any generator's schedule lag on this machine. bench/timer-floor.sh runs it.
 *   timer_floor N PERIOD_NS [MODE]
 * MODE `timerfd` (the default) sleeps on the timer; `spin` reads the clock in a loop until each
 * due time (a whole core, never asleep); `hybrid` sleeps until SPIN_NS before the due time, then
 * spins (SPIN_NS from the environment, default 500000). What is left late under `spin` is time
 * the thread was not running at all: the hypervisor's or the scheduler's, no waiting of ours. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include <stdint.h>
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
static long long now_ns(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1000000000LL+t.tv_nsec;}
static void sleep_until(int fd,long long due){struct itimerspec its={{0,0},{due/1000000000LL,due%1000000000LL}};
 timerfd_settime(fd,TFD_TIMER_ABSTIME,&its,0);uint64_t x;if(read(fd,&x,8)<0){}}
int main(int argc,char**argv){int n=atoi(argv[1]);long period_ns=atol(argv[2]);
 const char*mode=argc>3?argv[3]:"timerfd";
 long long spin_ns=getenv("SPIN_NS")?atoll(getenv("SPIN_NS")):500000;
 int fd=timerfd_create(CLOCK_MONOTONIC,0);double*lat=malloc(n*sizeof(double));
 long long due=now_ns()+period_ns;
 for(int i=0;i<n;i++){
  if(!strcmp(mode,"spin")){while(now_ns()<due){}}
  else if(!strcmp(mode,"hybrid")){if(due-spin_ns>now_ns())sleep_until(fd,due-spin_ns);while(now_ns()<due){}}
  else sleep_until(fd,due);
  lat[i]=(now_ns()-due)/1e6;due+=period_ns;}
 qsort(lat,n,sizeof(double),cmp);
 printf("%-7s n=%d period=%ldus p50=%.3f p99=%.3f p99.9=%.3f max=%.3f ms\n",mode,n,period_ns/1000,lat[n/2],lat[(int)(n*0.99)],lat[(int)(n*0.999)],lat[n-1]);}
