// The part of autocannon's API this benchmark uses (the package ships no types).
declare module 'autocannon' {
  namespace autocannon {
    interface Histogram {
      p50: number;
      p90: number;
      p99: number;
      average: number;
      max: number;
    }
    interface Result {
      '2xx': number;
      non2xx: number;
      errors: number;
      timeouts: number;
      latency: Histogram;
      requests: Histogram;
    }
    interface Options {
      url: string;
      connections?: number;
      duration?: number;
      pipelining?: number;
      requests?: { method?: string; path?: string; setupRequest?: (req: any) => any }[];
    }
  }
  function autocannon(opts: autocannon.Options): Promise<autocannon.Result>;
  export default autocannon;
}
