/* The machine's own timer wake-up delay: a thread that sleeps on a CLOCK_MONOTONIC timerfd
 * until absolute due times PERIOD apart (as volley's workers wait for their arrivals, engine
 * src/alarm.rs) and reads the clock on waking. Prints the delay's p50, p99, p99.9 and max:
 * the floor under any generator's schedule lag on this machine. bench/timer-floor.sh runs it.
 *   timer_floor N PERIOD_NS */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include <stdint.h>
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){int n=atoi(argv[1]);long period_ns=atol(argv[2]);
 int fd=timerfd_create(CLOCK_MONOTONIC,0);double*lat=malloc(n*sizeof(double));
 struct timespec now;clock_gettime(CLOCK_MONOTONIC,&now);
 long long due=now.tv_sec*1000000000LL+now.tv_nsec+period_ns;
 for(int i=0;i<n;i++){struct itimerspec its={{0,0},{due/1000000000LL,due%1000000000LL}};
  timerfd_settime(fd,TFD_TIMER_ABSTIME,&its,0);uint64_t x;read(fd,&x,8);
  clock_gettime(CLOCK_MONOTONIC,&now);long long t=now.tv_sec*1000000000LL+now.tv_nsec;
  lat[i]=(t-due)/1e6;due+=period_ns;}
 qsort(lat,n,sizeof(double),cmp);
 printf("n=%d period=%ldus p50=%.3f p99=%.3f p99.9=%.3f max=%.3f ms\n",n,period_ns/1000,lat[n/2],lat[(int)(n*0.99)],lat[(int)(n*0.999)],lat[n-1]);}
