use std::time::{Duration, Instant};

use weir_testkit::{client, parse_duration, HttpUpstream, Latency};

const MS: Duration = Duration::from_millis(1);

#[test]
fn parses_cli_forms() {
    assert_eq!("none".parse(), Ok(Latency::None));
    assert_eq!("fixed:5ms".parse(), Ok(Latency::Fixed(5 * MS)));
    assert_eq!("5ms".parse(), Ok(Latency::Fixed(5 * MS)));
    assert_eq!("uniform:1ms-5ms".parse(), Ok(Latency::Uniform(MS, 5 * MS)));
    assert_eq!(
        "exp:20ms".parse(),
        Ok(Latency::Exponential { mean: 20 * MS })
    );
    assert!("uniform:5ms-1ms".parse::<Latency>().is_err());
    assert!("gauss:5ms".parse::<Latency>().is_err());
    assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
    assert_eq!(parse_duration("40ms"), Ok(40 * MS));
    assert!(parse_duration("40").is_err());
}

#[test]
fn samples_follow_their_distribution() {
    assert_eq!(Latency::Fixed(7 * MS).sample(), 7 * MS);
    assert_eq!(Latency::None.sample(), Duration::ZERO);
    for _ in 0..1000 {
        let d = Latency::Uniform(MS, 5 * MS).sample();
        assert!((MS..=5 * MS).contains(&d), "{d:?}");
    }
    let exp = Latency::Exponential { mean: 20 * MS };
    let n = 20_000;
    let mean = (0..n).map(|_| exp.sample()).sum::<Duration>() / n;
    assert!((18 * MS..=22 * MS).contains(&mean), "{mean:?}");
}

async fn timed_get(up: &HttpUpstream, path: &str) -> Duration {
    let start = Instant::now();
    assert_eq!(client::get(up.addr(), path).await.unwrap().status, 200);
    start.elapsed()
}

#[tokio::test]
async fn latency_applies_and_query_overrides_it() {
    let fixed = HttpUpstream::builder("a")
        .latency(Latency::Fixed(100 * MS))
        .spawn()
        .await
        .unwrap();
    assert!(timed_get(&fixed, "/").await >= 100 * MS);
    assert!(timed_get(&fixed, "/?latency_ms=0").await < 80 * MS);
    assert!(
        timed_get(&fixed, "/healthz").await < 80 * MS,
        "health checks skip latency"
    );

    let none = HttpUpstream::spawn("b").await.unwrap();
    assert!(timed_get(&none, "/?latency_ms=60").await >= 60 * MS);

    let uniform = HttpUpstream::builder("c")
        .latency(Latency::Uniform(20 * MS, 40 * MS))
        .spawn()
        .await
        .unwrap();
    let d = timed_get(&uniform, "/").await;
    assert!(d >= 20 * MS && d < 500 * MS, "{d:?}");
}
