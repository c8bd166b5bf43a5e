//! A served policy behind [`ActionSource`]: evaluation, comparison and a distiller's teacher
//! use it exactly as a local one, one request per batch of observations.
use clawrl_policy::{ActionSource, Gaussians, PolicyConfig, PolicyError};

use crate::api::ModelInfo;
use crate::client::{Client, Result};
use crate::config::{EndpointConfig, Role};

pub struct RemotePolicy {
    client: Client,
    info: ModelInfo,
}

impl RemotePolicy {
    /// Connects to the model configured for `role`, checking that the server offers it.
    pub fn connect(
        config: EndpointConfig,
        role: Role,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self> {
        let id = config.model_id(role).to_string();
        let client = Client::new(config, env)?;
        let info = client.model(&id, role.config_key())?;
        Ok(Self { client, info })
    }

    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// `remote:teacher (model `id` at URL)`, for messages and reports.
    pub fn label(&self) -> String {
        format!(
            "model `{}` at {}",
            self.info.id,
            self.client.config().base_url
        )
    }
}

impl ActionSource for RemotePolicy {
    fn policy_config(&self) -> &PolicyConfig {
        &self.info.policy_config
    }

    fn is_squashed(&self) -> bool {
        self.info.action.squashed
    }

    fn gaussians(&self, raw_obs: &[f32]) -> clawrl_policy::Result<Gaussians> {
        let a = self
            .client
            .act(&self.info.id, raw_obs, self.info.observation.dim, true)
            .map_err(|e| PolicyError::Remote(e.to_string()))?;
        Ok(Gaussians {
            mean: a.mean,
            log_std: a.log_std,
        })
    }

    fn actions(&self, raw_obs: &[f32]) -> clawrl_policy::Result<Vec<f32>> {
        self.client
            .act(&self.info.id, raw_obs, self.info.observation.dim, true)
            .map(|a| a.actions)
            .map_err(|e| PolicyError::Remote(e.to_string()))
    }
}
